#!/usr/bin/env bash
# Make Debian's Slurm and munge available for the slurm tier (tests/slurm/): the test starts
# munged, slurmctld and slurmd itself, with a configuration of its own under a temporary
# directory, so nothing here configures or starts a daemon. Idempotent: installed programs
# are left alone. Without root nothing can be installed: the slurm tests then skip.
set -euo pipefail
# shellcheck source=apt.sh
. "$(dirname "$0")/apt.sh"

missing=0
for program in munged slurmctld slurmd sbatch; do
    if ! PATH="$PATH:/usr/sbin:/sbin" command -v "$program" >/dev/null 2>&1; then
        missing=1
    fi
done
if [ "$missing" = 0 ]; then
    echo "slurm: slurm-wlm and munge already installed"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "slurm: slurm-wlm or munge is missing and this is not root, so none can be installed here;" \
         "the slurm tests will be skipped (apt-get install slurm-wlm munge, or run as root, to include them)" >&2
    exit 0
fi
echo "slurm: installing slurm-wlm and munge"
apt_install slurm-wlm munge
echo "slurm: $(PATH="$PATH:/usr/sbin" command -v slurmctld) installed"
