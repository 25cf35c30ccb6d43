"""`python -m videoferry.flows.cli`: the same command line as the `videoferry` console script."""

from videoferry.flows.cli import main

main()
