"""After the move: `links` (the old -> new map) and `rewrite-embeds` (their options and runners; no flow)."""

from flows.job import Job

LINKS = Job("links", runner="flows.links.runner:run_links", outcome="flows.links.runner:LinksOutcome")
EMBEDS = Job(
    "rewrite-embeds", runner="flows.links.runner:run_rewrite", outcome="flows.links.runner:RewriteOutcome"
)
