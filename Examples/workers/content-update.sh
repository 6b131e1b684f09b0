#!/bin/sh
# An exec worker for "content-update" pushes (see config/pushworker.json5).
# stdin: the push payload (JSON). Env: PUSHWORKER_MESSAGE_ID, PUSHWORKER_TYPE, PUSHWORKER_DEADLINE_MS.
# The first stdout line is the outcome: newData, noData or failed, optionally followed by a reason.
payload=$(cat)
case "$payload" in
  *'"contentId"'*)
    echo "refreshing content for $PUSHWORKER_MESSAGE_ID" >&2
    echo newData ;;
  *)
    echo "noData noContentId" ;;
esac
