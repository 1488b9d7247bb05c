"""What verl loads in its Ray workers: the self-play agent loop, per-role advantages, step metrics, the reward adapter.

The `medplay train` process around them is `medical_team.launcher`.

`medical_team.verl_ext.plugin` registers the pieces with verl; load it in every verl process with
`VERL_USE_EXTERNAL_MODULES=medical_team.verl_ext.plugin` (docs/verl-integration.md lists the config keys).
Importing this package first checks that the installed verl is the release these pieces were written for.
"""

from medical_team.verl_ext.verl_version import check_verl_version

check_verl_version()
