# Sourced by the .ci scripts that install Debian packages. apt_install waits for
# another apt or dpkg run to release its locks (an unattended upgrade on a fresh
# machine, another script installing at the same time) instead of failing at once
# with "Could not get lock".
apt_install() {
    local wait=(-o DPkg::Lock::Timeout=600)
    local try
    for try in 1 2 3 4 5 6; do
        if apt-get "${wait[@]}" update -qq \
            && DEBIAN_FRONTEND=noninteractive apt-get "${wait[@]}" install -y -qq "$@" >/dev/null; then
            return 0
        fi
        echo "apt: installing $* failed (try $try of 6); waiting 20 s for the package locks" >&2
        sleep 20
    done
    return 1
}
