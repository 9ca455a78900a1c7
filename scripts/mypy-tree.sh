#!/usr/bin/env bash
# mypy cannot follow pyproject's package-dir mapping (crsbench.ingest lives in ingest/, ...), so
# lint runs it on a tree of symlinks shaped like the installed package: build/mypy/crsbench/...
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tree="$here/build/mypy/crsbench"
rm -rf "$here/build/mypy"
mkdir -p "$tree"
for entry in "$here"/crsbench/*; do
  ln -s "$entry" "$tree/$(basename "$entry")"
done
for stage in ingest features probes warehouse sql; do
  ln -s "$here/$stage" "$tree/$stage"
done
