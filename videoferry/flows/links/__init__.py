"""After the move: `links` (the old -> new map) and `rewrite-embeds` (their options and runners; no flow)."""

from videoferry.flows.job import Job

LINKS = Job(
    "links",
    runner="videoferry.flows.links.runner:run_links",
    outcome="videoferry.flows.links.runner:LinksOutcome",
)
EMBEDS = Job(
    "rewrite-embeds",
    runner="videoferry.flows.links.runner:run_rewrite",
    outcome="videoferry.flows.links.runner:RewriteOutcome",
)
