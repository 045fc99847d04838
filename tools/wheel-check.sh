#!/usr/bin/env bash
# Build openlab's wheel, install it with its BASE dependencies only (no extras) into a fresh venv outside the
# checkout, and run every command once from an empty folder: `--help` of each (sub)command, and real `init`,
# `plan`, `flops`, `train` (a few steps), `leaderboard build`, `doctor`. Catches an import only a test extra
# brings, a data file missing from the wheel, or code that reads the checkout. The base venv is kept between runs
# (keyed by the dependency list, so a changed list starts fresh): a re-run takes seconds plus the real calls.
#   tools/wheel-check.sh            (make wheel-check)   env: PY=python3  WHEEL_CHECK_DIR=/tmp/openlab-wheel-check
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-python3}
work=${WHEEL_CHECK_DIR:-${TMPDIR:-/tmp}/openlab-wheel-check}
case "$work/" in "$repo"/*) echo "wheel-check: WHEEL_CHECK_DIR must be outside the checkout" >&2; exit 2;; esac
step() { printf '\n== %s\n' "$*"; }
mkdir -p "$work"
# dist/ and run/ are this run's own (several checkouts may check at once); the base venv is shared, under a lock
scratch=$(mktemp -d "$work/run.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/dist" "$scratch/run"
start=$(date +%s)

step "build the wheel"
"$PY" -m pip wheel -q --no-deps -w "$scratch/dist" "$repo"
wheel=$(ls "$scratch"/dist/openlab-*.whl)
ls -l "$wheel"

# The venv holds exactly the wheel's base dependencies: it is keyed by the wheel's Requires-Dist (and Python), so
# a change to the dependency list gets a fresh venv, and a re-run with the same list only swaps openlab itself.
deps=$("$PY" - "$wheel" <<'PYEOF'
import hashlib, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    reqs = sorted(l for l in z.read(meta).decode().splitlines() if l.startswith("Requires-Dist:") and "extra ==" not in l)
print(hashlib.sha256(("\n".join(reqs) + sys.version).encode()).hexdigest()[:16])
PYEOF
)
venv="$work/venv-$deps"
step "venv with base dependencies only ($venv)"
exec 9>"$work/.lock"
flock 9   # held to the end: the venv's openlab is this run's wheel
if [ -f "$venv/.complete" ]; then
  "$venv/bin/python" -m pip install -q --no-deps --force-reinstall "$wheel"
else
  for old in "$work"/venv-*; do [ -d "$old" ] && rm -rf "$old"; done
  "$PY" -m venv "$venv"
  "$venv/bin/python" -m pip install -q "$wheel"
  touch "$venv/.complete"
fi
"$venv/bin/python" -m pip check
bin="$venv/bin"
export PATH="$bin:$PATH" PYTHONNOUSERSITE=1 PYTHONSAFEPATH=1 WANDB_MODE=disabled
unset PYTHONPATH VIRTUAL_ENV
cd "$scratch/run"   # nothing from the checkout is importable from here
python -c "import runner, sys; assert '$repo' not in runner.__file__, runner.__file__; print('openlab from', runner.__file__)"

step "every command's --help"
openlab --help >/dev/null
python "$repo/tools/wheel_check_commands.py"
openlab demo --help >/dev/null

step "openlab init in an empty git repository"
mkdir lab && cd lab
git init -q -b main .
openlab init --private-key "$scratch/run/signing.key"
git add -A && git -c user.name=check -c user.email=check@example.org commit -qm init

step "plan, flops, train (a few steps), leaderboard build"
openlab plan experiments/speedrun/example/example.py > plan.json
python -c "import json; p = json.load(open('plan.json')); assert p['steps'], p"
openlab flops experiments/speedrun/example/config.yaml > flops.json
sed -e 's/^  steps: .*/  steps: 3/' -e 's/^  warmup_steps: .*/  warmup_steps: 1/' -e 's/^  log_every: .*/  log_every: 1/' experiments/speedrun/example/config.yaml > quick.yaml
openlab train quick.yaml --out "$scratch/run/results/quick"
openlab leaderboard build --results "$scratch/run/results" --out "$scratch/run/site"
test -s "$scratch/run/site/index.html"
# the bundled chart library and the run page's curves come from the wheel, not the network
test -s "$scratch/run/site/vendor/chart.umd.min.js" && test -s "$scratch/run/site/run.js"
ls "$scratch"/run/site/runs/*.curves.js > /dev/null

step "doctor (reports, never a traceback)"
set +e
OPENLAB_SIGNING_KEY_FILE="$scratch/run/signing.key" openlab doctor > doctor.txt 2>&1
rc=$?
set -e
cat doctor.txt
if [ "$rc" -gt 1 ] || grep -q Traceback doctor.txt; then echo "doctor crashed (exit $rc)" >&2; exit 1; fi
grep -Eq '^signing key +ok' doctor.txt || { echo "doctor: the key init wrote does not match its public key" >&2; exit 1; }

echo
echo "wheel-check ok in $(( $(date +%s) - start )) s"
