"""The judge's server processes: medplay's HTTP judge server, and the served vLLM judge's first code.

`medplay judge serve` (and the appliance's `judge` program) runs the FastAPI app (app.py, with its access and body
limit middleware) over any judge backend of medical_team/judge/ (serving.py: uvicorn, in the foreground or in a
thread). `medplay train` starts the judge's `vllm serve` through served_judge_exec.py, which ends it with the
launcher.
"""
