#!/bin/sh
# An exec worker that always fails: exit status 3 becomes failed / workerError, detail
# "exit status 3; stderr: broken worker: simulated failure" (the last stderr lines).
cat >/dev/null
echo "broken worker: simulated failure" >&2
exit 3
