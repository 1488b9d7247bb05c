"""verl's agent-loop workers, Ray actors: the games are played here, and the judge is called from here.

The task runner's agent-loop manager starts `worker.SelfPlayAgentLoopWorker`; importing it registers medplay's agent
loops (agent_loop.py: `medplay_selfplay`, `medplay_assessor`), which play each game with the game driver and call
the judge built once per process (judge_factory.py), its long waits said on the console (judge_waits.py). verl's
reward-loop workers, which score the validation answers, load the reward function (reward_fn.py) by its path.
"""
