#!/usr/bin/env bash
# Installs the dependencies, builds zerobox, and shows it doing its main job.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" >/dev/null
exec "$root/scripts/demo.sh"
