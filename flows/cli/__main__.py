"""`python -m flows.cli`: the same command line as the `videoferry` console script."""

from flows.cli import main

main()
