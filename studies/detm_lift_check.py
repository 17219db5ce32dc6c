"""Issue 17, session 32: default DETM fits (and the SETM inside) on four large designs, to
compare two commits' fits and 95% profile intervals (run once per commit, each with
``PYTHONPATH`` at its tree; writes a JSON of the figures):

    PYTHONPATH=<tree> taskset -c 0 python studies/detm_lift_check.py out.json
"""
import os, sys, time, warnings, json
os.environ["OPENBLAS_NUM_THREADS"]="1"
import numpy as np
import puinfer as pu
from puinfer.simulate.detm import sar_design, scar_design, gamma_design
warnings.simplefilter("ignore")
out={}
cases={"scar1e5":(scar_design,100000,0.3,1),"sar1e5_0.7":(sar_design,100000,0.7,2),"gamma1e5":(gamma_design,100000,0.3,3),"sar6e4":(sar_design,30000,0.3,4)}
for name,(gen,n,pi,seed) in cases.items():
    df=gen(n,n,pi,p=15,rng=np.random.default_rng(seed))
    X = df[[f"x{j}" for j in range(1, 16)]].to_numpy(); lab = df.labeled.to_numpy()==1
    t=time.process_time(); d=pu.DETM(X[lab],X[~lab]).fit(); td=time.process_time()-t
    s=d.null_fit
    row=dict(t=td, dpi=d.pi, dllf=d.llf_penalized, dci=d.conf_int_pi(method="profile").to_numpy().ravel().tolist(),
             spi=s.pi, sllf=s.llf_penalized, sci=s.conf_int_pi(method="profile").to_numpy().ravel().tolist())
    out[name]=row; print(name,row,flush=True)
json.dump(out,open(sys.argv[1],"w"))
