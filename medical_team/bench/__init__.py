"""The benchmarks behind `medplay bench`: each subcommand's module measures one thing and writes its JSON (PNG and
Markdown where it draws), with the provenance every result carries (provenance.py), and prints a short table.

    medplay bench --help                     # the subcommands; `medplay bench step --help` and so on for each

The command line is medical_team/cli/bench.py; docs/benchmarks.md says how to run them and read the results.
"""
