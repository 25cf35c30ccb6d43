"""The links map written out: csv, json, an nginx `map` block and an Apache RewriteMap text file, the last two
loaded by those servers as they are (each old http(s) address -> the new player link)."""

from __future__ import annotations

import csv
import io
import json

from videoferry.tasks.links.table import COLUMNS, LinkRow, url_key

#: The --format values.
FORMATS = ("csv", "json", "nginx", "apache")
#: The nginx variable the map sets (the new address, or empty).
NGINX_VARIABLE = "$videoferry_link"
#: The RewriteMap's name in the Apache lines the file's header shows.
APACHE_MAP = "videoferry"


def redirects(rows: list[LinkRow]) -> tuple[list[tuple[str, str]], int]:
    """(old address, new link) for every http(s) address of a source, as a web server sees the request
    (host then decoded path, url_key with `www.` kept): its page (an http(s) source's own URL) -> the play
    link, its embed URL -> the embed link. The first row of an address wins; also how many addresses were
    left out (another row's for the same address, or a space, quote or `$` a map line cannot hold)."""
    pairs: dict[str, str] = {}
    skipped = 0
    for row in rows:
        for old, new in ((row.source_page, row.play_link), (row.source_embed, row.embed_link)):
            if not old.lower().startswith(("http://", "https://")) or not new:
                continue
            key = url_key(old, keep_www=True)
            if key in pairs:
                skipped += pairs[key] != new
            elif any(c.isspace() or c in "\"'$;{}" for c in key + new):
                skipped += 1
            else:
                pairs[key] = new
    return list(pairs.items()), skipped


def nginx_map(rows: list[LinkRow]) -> tuple[str, int]:
    """An nginx `map` block (include it in the http block) and how many addresses were left out."""
    pairs, skipped = redirects(rows)
    lines = [
        "# videoferry links: old address -> new player link. Include this file in nginx's http block; in a",
        "# server block that served the old addresses:",
        f"#   if ({NGINX_VARIABLE}) {{ return 301 {NGINX_VARIABLE}; }}",
        f"map $host$uri {NGINX_VARIABLE} {{",
        '    default "";',
    ]
    lines += [f'    "{old}" "{new}";' for old, new in pairs]
    lines.append("}")
    return "\n".join(lines) + "\n", skipped


def apache_map(rows: list[LinkRow]) -> tuple[str, int]:
    """An Apache RewriteMap text file (`txt:`; the lines to load it in its header) and how many addresses
    were left out."""
    pairs, skipped = redirects(rows)
    lines = [
        "# videoferry links: old address -> new player link, an Apache RewriteMap (txt). In the config:",
        "#   RewriteEngine on",
        "#   RewriteMap lowercase int:tolower",
        f'#   RewriteMap {APACHE_MAP} "txt:/path/to/this-file"',
        f"#   RewriteCond ${{{APACHE_MAP}:${{lowercase:%{{SERVER_NAME}}}}%{{REQUEST_URI}}}} ^(.+)$",
        "#   RewriteRule ^ %1 [R=301,L]",
    ]
    lines += [f"{old} {new}" for old, new in pairs]
    return "\n".join(lines) + "\n", skipped


def csv_text(rows: list[LinkRow]) -> str:
    """The rows as CSV with a header (COLUMNS)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(row.as_dict() for row in rows)
    return out.getvalue()


def json_text(rows: list[LinkRow]) -> str:
    """The rows as a JSON array of objects (COLUMNS)."""
    return json.dumps([row.as_dict() for row in rows], ensure_ascii=False, indent=2) + "\n"


def render(rows: list[LinkRow], fmt: str) -> tuple[str, int]:
    """The map in one format, and how many addresses a redirect map left out (0 for csv and json)."""
    if fmt == "nginx":
        return nginx_map(rows)
    if fmt == "apache":
        return apache_map(rows)
    if fmt == "json":
        return json_text(rows), 0
    return csv_text(rows), 0
