"""Real firmware in QEMU for the tests: Debian's U-Boot on an emulated arm64 board, and a Debian kernel with a
busybox initramfs on an emulated PC, each with its serial console on a loopback TCP socket.

QEMU listens with ``server=on,wait=on``: the emulated machine does not start until a client connects, so nothing
the firmware prints is lost before serial-mcp opens ``socket://127.0.0.1:P``. Nothing here is installed or run
as root: the kernel is ``apt-get download``-ed and unpacked into a cache directory, the initramfs is written
(cpio ``newc``, with its ``/dev/console`` node) by this module.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

UBOOT_CANDIDATES = ("/usr/lib/u-boot/qemu_arm64/u-boot.bin",)
QEMU_ARM64 = "qemu-system-aarch64"
QEMU_X86 = "qemu-system-x86_64"
KERNEL_META_PACKAGE = "linux-image-cloud-amd64"
LISTEN_DEADLINE = 30.0  # seconds for QEMU to listen on its serial socket (an external process start-up)
_TCP_LISTEN = "0A"

LINUX_USER = "root"
LINUX_PASSWORD = "serial"
LINUX_HOSTNAME = "board"
LINUX_PROMPT_SUFFIX = "# "


def cache_dir() -> Path:
    """Where downloaded kernels and built images are kept between runs (``SERIAL_MCP_FIRMWARE_CACHE`` or
    ``/var/tmp/serial-mcp-firmware``)."""
    path = Path(os.environ.get("SERIAL_MCP_FIRMWARE_CACHE", "/var/tmp/serial-mcp-firmware"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening(port: int) -> bool:
    """Whether 127.0.0.1:``port`` is in LISTEN state, read from /proc (a probing connect would start the VM and
    take QEMU's only client slot)."""
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            host, hexport = fields[1].split(":")
            if fields[3] == _TCP_LISTEN and int(hexport, 16) == port and host in ("0100007F", "00000000"):
                return True
    return False


def uboot_binary() -> Path | None:
    return next((Path(p) for p in UBOOT_CANDIDATES if Path(p).is_file()), None)


def missing_for_uboot() -> str | None:
    """Why the U-Boot machine cannot run here, or None."""
    if shutil.which(QEMU_ARM64) is None:
        return f"{QEMU_ARM64} not found (apt-get install qemu-system-arm)"
    if uboot_binary() is None:
        return f"U-Boot for QEMU not found at {UBOOT_CANDIDATES[0]} (apt-get install u-boot-qemu)"
    return None


@dataclass
class Machine:
    """One QEMU process whose first serial port listens on 127.0.0.1:``port``."""

    argv: list[str]
    workdir: Path
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    log_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log_path = self.workdir / "qemu.log"

    @property
    def url(self) -> str:
        return f"socket://127.0.0.1:{self.port}"

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def start(self) -> Machine:
        for _ in range(3):  # a free port can be taken between probing and QEMU's bind: try another
            self.port = free_port()
            serial = f"tcp:127.0.0.1:{self.port},server=on,wait=on"
            with open(self.log_path, "ab") as out:
                self.proc = subprocess.Popen(
                    [*self.argv, "-serial", serial],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            if self._wait_listening():
                return self
            self.kill()
        raise RuntimeError(f"QEMU did not listen on its serial socket: {self.log()}")

    def _wait_listening(self) -> bool:
        deadline = time.monotonic() + LISTEN_DEADLINE
        delay = 0.005
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                return False
            if listening(self.port):
                return True
            time.sleep(delay)  # an external process starting: nothing to wait on but the clock
            delay = min(delay * 2, 0.1)
        return False

    def kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def uboot_machine(workdir: Path) -> Machine:
    """Debian's ``qemu_arm64`` U-Boot on ``-M virt``: banner, a 2 s autoboot countdown, a failing boot, ``=> ``."""
    binary = uboot_binary()
    assert binary is not None, missing_for_uboot()
    argv = [QEMU_ARM64, "-M", "virt", "-cpu", "cortex-a57", "-m", "256", "-accel", "tcg", "-nographic"]
    argv += ["-monitor", "none", "-nic", "none", "-bios", str(binary)]
    return Machine(argv, workdir)


# --- Linux: a Debian cloud kernel and a busybox initramfs ------------------------------------------------------


def _busybox() -> Path | None:
    """A statically linked busybox (package busybox-static), or None: an ELF without a program interpreter."""
    for candidate in ("/bin/busybox", "/usr/bin/busybox"):
        path = Path(candidate)
        if path.is_file() and b"/ld-linux" not in path.read_bytes()[:4096]:
            return path
    return None


def kernel_image() -> Path | None:
    """The newest kernel unpacked in the cache (``<cache>/kernel/boot/vmlinuz-*``), or None."""
    found = sorted((cache_dir() / "kernel" / "boot").glob("vmlinuz-*"))
    return found[-1] if found else None


def fetch_kernel() -> Path | None:
    """Download (no install) the current Debian cloud kernel and unpack it into the cache; None when apt cannot."""
    if (image := kernel_image()) is not None:
        return image
    if shutil.which("apt-cache") is None or shutil.which("apt-get") is None:
        return None
    deps = subprocess.run(
        ["apt-cache", "depends", KERNEL_META_PACKAGE], capture_output=True, text=True, check=False
    ).stdout
    names = [
        w
        for line in deps.splitlines()
        if "Depends:" in line
        for w in line.split()
        if w.startswith("linux-image-")
    ]
    if not names:
        return None
    cache = cache_dir()
    debs = cache / "debs"
    debs.mkdir(exist_ok=True)
    subprocess.run(["apt-get", "download", names[0]], cwd=debs, capture_output=True, check=False, timeout=300)
    for deb in sorted(debs.glob(f"{names[0]}_*.deb")):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(cache / "kernel")], check=False, timeout=300)
    return kernel_image()


def missing_for_linux() -> str | None:
    """Why the Linux machine cannot run here, or None (fetches the kernel into the cache if needed)."""
    if shutil.which(QEMU_X86) is None:
        return f"{QEMU_X86} not found (apt-get install qemu-system-x86)"
    if _busybox() is None:
        return "a static busybox not found (apt-get install busybox-static)"
    if fetch_kernel() is None:
        return f"no kernel: apt-get download of {KERNEL_META_PACKAGE}'s kernel failed (see .ci/run)"
    return None


INITTAB = """\
::sysinit:/etc/rcS
ttyS0::respawn:/sbin/getty -L 115200 ttyS0 vt100
"""

RCS = f"""\
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
hostname {LINUX_HOSTNAME}
"""

PROFILE = "export PS1='\\u@\\h:\\w\\$ '\nexport HOME=/root\ncd /root\n"


def _newc(name: str, mode: int, data: bytes = b"", rdev: tuple[int, int] = (0, 0), ino: int = 0) -> bytes:
    fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(name) + 1, 0]
    head = b"070701" + b"".join(b"%08x" % v for v in fields) + name.encode() + b"\0"
    head += b"\0" * (-len(head) % 4)
    return head + data + b"\0" * (-len(data) % 4)


def build_initramfs(path: Path) -> Path:
    """A cpio (newc) root: static busybox and its applet links, busybox init with a getty on ttyS0, and a root
    user whose password is ``LINUX_PASSWORD``."""
    busybox = _busybox()
    assert busybox is not None
    applets = subprocess.run(
        [str(busybox), "--list-full"], capture_output=True, text=True, check=True
    ).stdout.split()
    pw_hash = subprocess.run(
        [str(busybox), "mkpasswd", "-m", "sha512", "-S", "serialmc", LINUX_PASSWORD],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    dirs = ["bin", "sbin", "usr", "usr/bin", "usr/sbin", "etc", "proc", "sys", "dev", "root", "tmp"]
    files = {
        "etc/inittab": (INITTAB.encode(), 0o644),
        "etc/rcS": (RCS.encode(), 0o755),
        "etc/profile": (PROFILE.encode(), 0o644),
        "etc/passwd": (f"{LINUX_USER}:x:0:0:root:/root:/bin/sh\n".encode(), 0o644),
        "etc/shadow": (f"{LINUX_USER}:{pw_hash}:19000:0:99999:7:::\n".encode(), 0o600),
        "etc/group": (b"root:x:0:\n", 0o644),
        "bin/busybox": (busybox.read_bytes(), 0o755),
    }
    out = bytearray()
    ino = 1
    for d in dirs:
        out += _newc(d, stat.S_IFDIR | 0o755, ino=ino)
        ino += 1
    out += _newc("dev/console", stat.S_IFCHR | 0o600, rdev=(5, 1), ino=ino)
    ino += 1
    for name, (data, mode) in files.items():
        out += _newc(name, stat.S_IFREG | mode, data, ino=ino)
        ino += 1
    links = {a: "/bin/busybox" for a in applets if a != "bin/busybox"}
    links["init"] = "/bin/busybox"
    for name, target in sorted(links.items()):
        out += _newc(name, stat.S_IFLNK | 0o777, target.encode(), ino=ino)
        ino += 1
    out += _newc("TRAILER!!!", 0)
    path.write_bytes(bytes(out))
    return path


def linux_machine(workdir: Path, initramfs: Path) -> Machine:
    """The cached Debian cloud kernel + the busybox initramfs on an emulated PC (TCG), console on ttyS0."""
    kernel = kernel_image()
    assert kernel is not None, missing_for_linux()
    append = "console=ttyS0,115200 quiet panic=-1 loglevel=3 tsc=unstable"
    argv = [QEMU_X86, "-M", "pc", "-m", "256", "-accel", "tcg", "-smp", "1", "-nographic", "-no-reboot"]
    argv += ["-monitor", "none", "-nic", "none", "-kernel", str(kernel), "-initrd", str(initramfs)]
    argv += ["-append", append]
    return Machine(argv, workdir)
