"""The demo of the README's first command (``python -m puinfer``): its sections and options."""

import warnings

import pytest

from puinfer.__main__ import main
from puinfer.exceptions import PuinferWarning


def test_urc_section_uses_the_stratified_lab_design(capsys):
    # the lab set is 200 spam + 200 non-spam by design (session 67's audit: the demo fitted
    # the default random design, unlike the README's analysis of the same data)
    assert main(["urc"]) == 0
    out = capsys.readouterr().out
    assert "stratified (class counts fixed by design)" in out
    assert "true spam shares" in out and "SETM" not in out


def test_options(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0 and "which analyses to run" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["nope"])
    assert e.value.code == 2
    # named plainly (session 68's audit: "choose from [], 'pu', ..."), and a section given
    # twice runs once
    err = capsys.readouterr().err
    assert "unknown section(s) ['nope']; choose from ['pu', 'calem', 'urc', 'prior']" in err
    assert main(["calem", "calem"]) == 0
    assert capsys.readouterr().out.count("CalEM: calibration with clean control") == 1


def test_pu_section_prints_its_warnings_in_the_summaries_not_on_stderr(capsys):
    # session 71's docs audit: the SCAR test's null fit warned on stderr from the DETM
    # summary (attributed to the demo's sys.exit line), although the summary prints it
    with warnings.catch_warnings(record=True) as caught:
        assert main(["pu"]) == 0  # (its simplefilter("default") acts inside this block)
    assert "Warning (SeparationWarning): SCAR test's null fit (SETM)" in capsys.readouterr().out
    assert not [w for w in caught if issubclass(w.category, PuinferWarning)]


def test_prior_section_corrects_the_down_sampled_model(capsys):
    assert main(["prior"]) == 0
    out = capsys.readouterr().out
    rows = {line.split("  ")[0]: line.split()[-5:] for line in out.splitlines()
            if line.startswith(("all rows", "down-sampled"))}
    mean = {k: float(v[0]) for k, v in rows.items()}
    # the raw down-sampled predictions average the training set's base rate (~0.15); corrected
    # they average the population's, as the model fitted on every row does
    assert mean["down-sampled, raw"] > 0.1
    # (the full model's mean prediction 0.0088 has a sampling SD of about 0.0001 over
    # repeated down-samples: the vignette prior_shift_downsampling)
    assert abs(mean["down-sampled, corrected"] - mean["all rows"]) < 0.0005
