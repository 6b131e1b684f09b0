#!/bin/sh
# An exec worker that always fails: exit status 3 becomes failed / workerError ("exit status 3").
cat >/dev/null
echo "broken worker: simulated failure" >&2
exit 3
