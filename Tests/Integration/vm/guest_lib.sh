# Shell helpers shared by the scripts that run INSIDE the VM rig (e2e_guest.sh, bench_guest.sh).

hidraw_with_uniq() {  # the /dev/hidrawN whose HID uniq is UNIQ
    local dir
    for dir in /sys/class/hidraw/hidraw*; do
        [ -e "$dir" ] || continue
        if grep -qx "HID_UNIQ=$1" "$dir/device/uevent" 2>/dev/null; then echo "/dev/$(basename "$dir")"; return 0; fi
    done
    return 1
}
hidraw_for() { hidraw_with_uniq "latchkey:$1"; }  # the /dev/hidrawN of Latchkey key NAME
