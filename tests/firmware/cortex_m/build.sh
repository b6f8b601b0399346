#!/bin/sh
# Builds fault-demo.elf (committed: the tests need only qemu-system-arm) with Debian's gcc-arm-none-eabi and
# libnewlib-arm-none-eabi:  apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi; sh build.sh
# Run it:  qemu-system-arm -M mps2-an385 -nographic -kernel fault-demo.elf   (then type z, m, o, n, c, b or a)
set -eu
cd "$(dirname "$0")"
arm-none-eabi-gcc -mcpu=cortex-m3 -mthumb -Og -g -fno-optimize-sibling-calls -ffreestanding -Wall -Wextra \
    -fdebug-prefix-map="$PWD"= --specs=nano.specs --specs=nosys.specs -nostartfiles -T link.ld \
    -Wl,--gc-sections -o fault-demo.elf app.c fault_demo.c
arm-none-eabi-size fault-demo.elf
