"""The judge-wait lines: what the agent-loop workers print while games wait on the judge, and the launcher relays.

The workers' half is medical_team/agent_loop/judge_waits.py, the launcher's medical_team/launcher/console/judge_wait_relay.py;
Ray forwards the workers' lines to the run log, where the launcher finds them by WAIT_MARK.
"""

WAIT_MARK = "medplay: judge wait:"
OVER = "over"  # the text after WAIT_MARK once a worker's long waits ended
