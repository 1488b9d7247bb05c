"""Everything that knows verl: the self-play agent loop, per-role advantages, step metrics, the reward adapter.

`medical_team.verl_ext.plugin` registers the pieces with verl; load it in every verl process with
`VERL_USE_EXTERNAL_MODULES=medical_team.verl_ext.plugin` (docs/verl-integration.md lists the config keys).
"""
