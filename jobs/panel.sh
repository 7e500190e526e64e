#!/usr/bin/env bash
# Issue 49's panel: ssdr fit variants against scikit-learn recipes on 6 data sets x 2 regimes
# (5 labeled per class; 30 % labeled) x 3 seeds, each a CSV with class names and empty labels.
#   jobs/panel.sh --variant "soda=--method soda" [--variant NAME=ARGS ...] [--ranks P]
#                 [--sets iris,wine] [--regimes 5pc,30pct] [--seeds 0,1,2] [--out DIR] [--skip-sklearn]
#                 [--extra NAME=PATH[:header][:label=first] ...]   (your own CSV or .mat data sets)
# The build dir is $SSDR_BUILD, else build/ (see jobs/env.sh); output in scratch/panel.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
if [ ! -x "$SSDR_BUILD/ssdr" ]; then
  echo "panel.sh: $SSDR_BUILD/ssdr not found: build it (jobs/build.sh) or set SSDR_BUILD" >&2
  exit 1
fi
# Debian's interpreter, where numpy, pandas and scikit-learn live.
exec "${SSDR_PYTHON:-/usr/bin/python3}" "$SSDR_ROOT/jobs/panel.py" --build "$SSDR_BUILD" "$@"
