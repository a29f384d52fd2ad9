#!/bin/sh
# Run the official Python clients' own e2e suites against `jobset sim`, with their busybox,
# python and nginx images given to it as real processes (`--run-image`). A manual step, not
# part of `make test`: the suites are not in this repository and this fetches nothing.
#
#   tools/client_e2e.sh PYTHON_CLIENT_CHECKOUT KUBERNETES_ASYNCIO_CHECKOUT
#
# Each checkout is a git clone of kubernetes-client/python or tomplus/kubernetes_asyncio;
# their `e2e_test` packages run against the clients installed in .venv (a copy of each
# installed package with the checkout's e2e_test added). Needs root, as --run-image does.
# A --run-image container sees only the host's system directories and its image directory
# (plus, for a virtualenv's bin, that virtualenv and its base interpreter), so the python and
# nginx stand-ins are virtualenvs of .venv's base interpreter, whatever python3 is on PATH.
set -eu
PY_REPO=$(cd "$1" && pwd)
ASYNC_REPO=$(cd "$2" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON="$ROOT/.venv/bin/python"
WORK=$(mktemp -d /var/tmp/jobset-client-e2e.XXXXXX)
chmod 755 "$WORK"  # the pods' users read the image directories
SIM_PID=""
cleanup() {
    [ -n "$SIM_PID" ] && kill "$SIM_PID" && wait "$SIM_PID" || true
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# The images. busybox: its applets, and no ENTRYPOINT (a container with args runs them).
mkdir -p "$WORK/busybox"
busybox --install -s "$WORK/busybox"
printf '#!/bin/sh\nexec "$@"\n' > "$WORK/busybox/entrypoint"
# python: `python` (and python3) of a bare virtualenv, its bin the image directory.
"$PYTHON" -m venv --without-pip "$WORK/python"
# nginx: a stand-in serving nginx's welcome page on port 80 (all the suites ask of it).
"$PYTHON" -m venv --without-pip "$WORK/nginx"
mkdir -p "$WORK/nginx/html"
printf '<html><head><title>Welcome to nginx!</title></head><body><h1>Welcome to nginx!</h1></body></html>\n' \
    > "$WORK/nginx/html/index.html"
printf '#!/bin/sh\nexec python3 -m http.server 80 --directory "$(dirname "$0")/../html"\n' \
    > "$WORK/nginx/bin/entrypoint"
chmod -R a+rX "$WORK"
chmod 755 "$WORK/busybox/entrypoint" "$WORK/nginx/bin/entrypoint"

# The installed clients with the checkouts' suites added.
SITE=$("$PYTHON" -c 'import kubernetes, os; print(os.path.dirname(os.path.dirname(kubernetes.__file__)))')
mkdir -p "$WORK/pyk" "$WORK/pyka"
cp -r "$SITE/kubernetes" "$WORK/pyk/"
cp -r "$PY_REPO/kubernetes/e2e_test" "$WORK/pyk/kubernetes/"
cp -r "$PY_REPO/kubernetes/aio/e2e_test" "$WORK/pyk/kubernetes/aio/"
cp -r "$SITE/kubernetes_asyncio" "$WORK/pyka/"
cp -r "$ASYNC_REPO/kubernetes_asyncio/e2e_test" "$WORK/pyka/kubernetes_asyncio/"

"$ROOT/.venv/bin/jobset" sim --port 0 --kubeconfig "$WORK/kubeconfig" \
    --run-image busybox="$WORK/busybox" --run-image python="$WORK/python/bin" \
    --run-image nginx="$WORK/nginx/bin" > "$WORK/sim.log" 2>&1 &
SIM_PID=$!
until grep -q "jobset sim ready" "$WORK/sim.log"; do
    kill -0 "$SIM_PID" || { cat "$WORK/sim.log"; exit 1; }
    sleep 1
done

status=0
export KUBECONFIG="$WORK/kubeconfig"
(cd "$WORK/pyk" && "$PYTHON" -m pytest -p no:cacheprovider -q -n 0 -rfEs \
    kubernetes/e2e_test kubernetes/aio/e2e_test) || status=1
(cd "$WORK/pyka" && "$PYTHON" -m pytest -p no:cacheprovider -q -n 0 -rfEs \
    kubernetes_asyncio/e2e_test) || status=1
if [ "$status" -ne 0 ]; then
    # What the simulator saw go wrong (a container that could not start, say), for the failures.
    echo "--- the simulator's warnings, errors and StartErrors:"
    grep -E '\[(warning|error|critical) *\]|reason=StartError' "$WORK/sim.log" | tail -n 50 || true
fi
exit $status
