"""Issue 19, exploratory (session 30): would a start from a more strongly penalised fit (a
homotopy in the ridge: the fit at 4, 16 or 64 times the default strength, polished at the
default) reach the higher maxima the default search misses? On the 7 known misses at
n = m = 1000, pi = 0.7 (2 fresh of ``detm_search_misses.py``, 5 left of session 28's
``_w1000`` runs), each line: the default fit, the polished truth and the polished
homotopy starts (gap to the fit in brackets).

    PYTHONPATH=. python studies/detm_homotopy_starts.py [0|1]   # half of the cases each
"""
import os
import sys
import warnings

sys.path.insert(0, "studies")
os.environ["OPENBLAS_NUM_THREADS"]="1"
import numpy as np
from detm_interval import DESIGNS, formula, independent, true_v

import puinfer as pu
from puinfer.models.detm._starts import _setm_index

warnings.simplefilter("ignore")
cases=[("sar","DETM",0.7,82000022),("scar","SETM",0.7,182000228),("scar","SETM",0.7,112000112),("scar","SETM",0.7,112000141),("scar","SETM",0.7,112000362),("sar","DETM",0.7,12000221),("sar","DETM",0.7,12000311)]
if len(sys.argv)>1: cases=cases[int(sys.argv[1])::2]
p=15; n=1000
for design, mname, pi, seed in cases:
    rng=np.random.default_rng(seed)
    df=DESIGNS[design](n,n,pi,p=p,rng=rng)
    restricted = mname=="SETM"
    model=getattr(pu,mname).from_formula(formula(p), data=df)
    res=model.fit(pi_interval="profile"); data=model.data; c=res.penalty_strength
    tv=true_v(data,pi,p,design,restricted)
    f_t,pi_t,_=independent(res,data,[("truth",tv)],restricted)
    out=[f"{design} {mname} {seed}: fit {res.llf_penalized:.3f} pi {res.pi:.3f} | truth {f_t:.3f} pi {pi_t:.3f} |"]
    for k in (4,16,64):
        rk=model.fit(penalty=k*c, pi_interval="profile", probe=False)
        v=np.asarray(rk._fit.v)
        st=[("h", v[_setm_index(p)] if restricted else v)]
        if not restricted: st.append(("hm", np.r_[v[p+1:], v[:p+1]]))
        f_h,pi_h,lab=independent(res,data,st,restricted)
        out.append(f"x{k}: {f_h:.3f} pi {pi_h:.3f} ({f_h-res.llf_penalized:+.3f})")
    print(" ".join(out), flush=True)
