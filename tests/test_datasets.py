"""Bundled datasets: the checks of ../shared/data/README.md."""

import puinfer as pu


def test_mobile_price_and_pu_split():
    df = pu.datasets.load_mobile_price()
    assert df.shape == (2000, 21)
    assert df.price_range.value_counts().to_dict() == {0: 500, 1: 500, 2: 500, 3: 500}
    assert abs(df.ram.mean() - 2124.213) < 1e-9
    pu_df = pu.datasets.load_mobile_pu()
    assert pu_df.labeled.sum() == 500
    target = pu_df[pu_df.labeled == 0]
    assert len(target) == 1500 and target.y_true.mean() == 2 / 3
    assert set(pu_df.price_range[pu_df.labeled == 1]) == {2}


def test_hillstrom():
    h = pu.datasets.load_hillstrom()
    assert h.shape == (64000, 12)
    assert h.segment.value_counts().to_dict() == {
        "Womens E-Mail": 21387, "Mens E-Mail": 21307, "No E-Mail": 21306}
    assert h.visit.sum() == 9394 and h.conversion.sum() == 578
