#!/usr/bin/env bash
# Installs the peers of `strata-bench --bin dynamodb` outside the repo:
#   dynalite (npm, DynamoDB on LevelDB) and moto (PyPI, `moto[server]`, in memory)
# into ${STRATA_BENCH_PEERS:-~/.cache/strata-bench-peers}. Needs node + npm and python3 (venv, pip).
set -euo pipefail
dir="${STRATA_BENCH_PEERS:-$HOME/.cache/strata-bench-peers}"
mkdir -p "$dir"
cd "$dir"
if ! command -v npm >/dev/null 2>&1; then
  echo "npm missing: apt-get install nodejs npm" >&2; exit 1
fi
[ -f package.json ] || echo '{"private": true}' > package.json
npm install --silent dynalite
[ -x venv/bin/pip ] || python3 -m venv venv
venv/bin/pip install -q 'moto[server]'
echo "peers in $dir: dynalite $(node -p "require('./node_modules/dynalite/package.json').version"), moto $(venv/bin/python -c 'import moto; print(moto.__version__)')"
