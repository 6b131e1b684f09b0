"""The hosts of multihost.py: the network namespaces, bridge and veths (Network), the processes started in
them (Processes), nftables helpers, the mock broker with its socat forwarders (Cluster) and each member
host's `pushworker run` (Member), with the constants and small helpers they share."""
import ctypes
import json
import os
import random
import re
import select
import signal
import subprocess
import sys
import time
import urllib.request
from datetime import datetime

INPUT, RESULTS, RETRIES = "pushes", "push-results", "push-retries"
PARTITIONS = 6
MEMBERS = 3
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_MS = 500
HTTP_PORT = 9400
STATE_DIR = "/run/pushworker-multihost"
NS_PATTERN = re.compile(r"^pw(?:b|sw|m\d+)-([0-9a-f]{6})$")
CLONE_NEWNET = 0x40000000
ALL_PARTITIONS = {f"{t}[{p}]" for t in (INPUT, RETRIES) for p in range(PARTITIONS)}
INPUT_PARTITIONS = {f"{INPUT}[{p}]" for p in range(PARTITIONS)}

Consumer = Producer = TopicPartition = OFFSET_BEGINNING = KafkaException = None  # set by load_kafka()


def load_kafka():
    global Consumer, Producer, TopicPartition, OFFSET_BEGINNING, KafkaException
    from confluent_kafka import OFFSET_BEGINNING as ob, Consumer as c, KafkaException as ke, Producer as p, \
        TopicPartition as tp
    Consumer, Producer, TopicPartition, OFFSET_BEGINNING, KafkaException = c, p, tp, ob, ke


def log(message):
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


def iso_seconds(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


# --------------------------------------------------------------------------------------------------------
# Processes and namespaces

_libc = ctypes.CDLL(None, use_errno=True)


def setns(fd):
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"setns: {os.strerror(errno)}")


def sh(*argv, check=True, input=None):
    """Runs a short command; returns its stdout. Raises with its stderr when `check` and it fails."""
    result = subprocess.run(list(argv), input=input, capture_output=True, text=True, timeout=30)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {result.returncode}: {result.stderr.strip()}")
    return result.stdout


class Processes:
    """Every process this script starts, so that it can stop each one by its pid."""

    def __init__(self):
        self.procs = []

    def spawn(self, ns, argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=None, cwd=None):
        # `ip netns exec` execs the program (no fork): the pid is the program's own.
        proc = subprocess.Popen(["ip", "netns", "exec", ns] + argv, stdin=subprocess.DEVNULL, stdout=stdout,
                                stderr=stderr, env=env, cwd=cwd, start_new_session=True)
        self.procs.append(proc)
        return proc

    @staticmethod
    def stop(proc, sig=signal.SIGTERM, timeout=10):
        if proc.poll() is None:
            try:
                os.kill(proc.pid, sig)
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
            except ProcessLookupError:
                pass
        return proc.returncode

    def stop_all(self):
        for proc in self.procs:
            self.stop(proc, timeout=5)
        self.procs = [p for p in self.procs if p.poll() is None]


class Network:
    """The namespaces, the bridge and the veths of this run."""

    def __init__(self, members):
        self.token = "%06x" % random.SystemRandom().getrandbits(24)
        rng = random.SystemRandom()
        self.net = f"10.{rng.randint(16, 250)}.{rng.randint(0, 255)}"
        self.switch = f"pwsw-{self.token}"
        self.broker = f"pwb-{self.token}"
        self.broker_ip = f"{self.net}.1"
        self.members = [(f"pwm{i + 1}-{self.token}", f"{self.net}.{11 + i}") for i in range(members)]
        self.created = []
        self.pidfile = os.path.join(STATE_DIR, f"{self.token}.pid")
        self.original_ns = None

    def namespaces(self):
        return [self.switch, self.broker] + [ns for ns, _ in self.members]

    def setup(self):
        os.makedirs(STATE_DIR, exist_ok=True)
        with open(self.pidfile, "w") as f:
            f.write(str(os.getpid()))
        for ns in self.namespaces():
            sh("ip", "netns", "add", ns)
            self.created.append(ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", self.switch, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", self.switch, "link", "set", "br0", "up")
        hosts = [("b", self.broker, self.broker_ip)] + [(f"m{i + 1}", ns, ip) for i, (ns, ip) in enumerate(self.members)]
        for short, ns, ip in hosts:
            port = f"s{short}"
            # Both ends are created straight in their namespaces: nothing ever exists in the machine's own.
            sh("ip", "link", "add", port, "netns", self.switch, "type", "veth", "peer", "name", "eth0", "netns", ns)
            sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "-n", self.switch, "link", "set", port, "master", "br0", "up")

    def enter_broker(self):
        """Moves this (main) thread into the broker namespace; threads started later (ours and
        librdkafka's) inherit it."""
        self.original_ns = os.open("/proc/self/ns/net", os.O_RDONLY)
        fd = os.open(f"/run/netns/{self.broker}", os.O_RDONLY)
        try:
            setns(fd)
        finally:
            os.close(fd)

    def leave_broker(self):
        if self.original_ns is not None:
            setns(self.original_ns)
            os.close(self.original_ns)
            self.original_ns = None

    @staticmethod
    def kill_inside(ns):
        """SIGKILLs the processes left in a namespace of this run (forwarders' children …), not this one."""
        try:
            pids = [int(p) for p in sh("ip", "netns", "pids", ns, check=False).split()]
        except (ValueError, RuntimeError, subprocess.TimeoutExpired):
            return
        for pid in pids:
            if pid != os.getpid():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def teardown(self):
        try:
            self.leave_broker()
        except OSError as error:
            print(f"leaving the broker namespace: {error}", file=sys.stderr)
        for ns in reversed(self.created):
            self.kill_inside(ns)
        for ns in reversed(self.created):
            sh("ip", "netns", "del", ns, check=False)
        self.created = []
        try:
            os.remove(self.pidfile)
        except OSError:
            pass

    @staticmethod
    def remove_stale():
        """Deletes namespaces named as this script names them whose run is gone (its pid file missing, or
        its pid no longer a multihost.py)."""
        try:
            names = [line.split()[0] for line in sh("ip", "netns", "list", check=False).splitlines() if line.strip()]
        except (RuntimeError, subprocess.TimeoutExpired):
            return
        for name in names:
            match = NS_PATTERN.match(name)
            if not match:
                continue
            pidfile = os.path.join(STATE_DIR, f"{match.group(1)}.pid")
            alive = False
            try:
                with open(pidfile) as f:
                    pid = int(f.read().strip())
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    alive = b"multihost.py" in f.read()
            except (OSError, ValueError):
                pass
            if not alive:
                log(f"removing namespace {name} left by a run that is gone")
                Network.kill_inside(name)
                sh("ip", "netns", "del", name, check=False)
                try:
                    os.remove(pidfile)
                except OSError:
                    pass


def nft(ns, script=None, *args):
    if script is not None:
        return sh("ip", "netns", "exec", ns, "nft", "-f", "-", input=script)
    return sh("ip", "netns", "exec", ns, "nft", *args)


def nft_dropped(ns, table):
    """Packets counted by the `counter`s of `table` (dropped), or None."""
    try:
        text = nft(ns, None, "list", "table", "inet", table)
    except RuntimeError:
        return None
    return sum(int(n) for n in re.findall(r"counter packets (\d+)", text))


def listening(pid, port, timeout=10):
    """Waits until the process `pid` (in its namespace) has a TCP socket listening on `port`."""
    deadline = time.monotonic() + timeout
    want = f":{port:04X}"
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/net/tcp") as f:
                for line in f.readlines()[1:]:
                    fields = line.split()
                    if fields[1].endswith(want) and fields[3] == "0A":
                        return True
        except OSError:
            return False
        time.sleep(0.05)
    return False


# --------------------------------------------------------------------------------------------------------
# The broker, the forwarders, the members

class Cluster:
    """`pushworker dev --broker-only` in the broker namespace and the socat forwarders of its ports."""

    def __init__(self, procs, net, exe, workdir, brokers):
        self.procs, self.net = procs, net
        config = os.path.join(workdir, "broker.json5")
        with open(config, "w") as f:
            json.dump({"dev": {"partitions": PARTITIONS}, "inputTopics": [INPUT], "resultsTopic": RESULTS,
                       "retries": {"topic": RETRIES}, "statusPage": {"enabled": False}, "log": {"level": "info"}}, f)
        env = dict(os.environ, PUSHWORKER_DEV_BOOTSTRAP_FILE="")
        self.log = open(os.path.join(workdir, "broker.log"), "ab")
        self.proc = procs.spawn(net.broker, [exe, "dev", "--broker-only", "--brokers", str(brokers), "--config", config],
                                stdout=subprocess.PIPE, stderr=self.log, env=env, cwd=workdir)
        ready, _, _ = select.select([self.proc.stdout], [], [], 30)
        line = self.proc.stdout.readline().decode().strip() if ready else ""
        if not line.startswith("bootstrap.servers="):
            raise RuntimeError(f"the broker did not start: {line!r} (see {self.log.name})")
        self.bootstrap = line.split("=", 1)[1]
        self.ports = [int(s.rsplit(":", 1)[1]) for s in self.bootstrap.split(",")]
        self.forwarders = []
        fwlog = open(os.path.join(workdir, "forwarders.log"), "ab")
        for port in self.ports:
            self.forwarders.append(procs.spawn(net.broker, ["socat", f"TCP-LISTEN:{port},bind={net.broker_ip},fork,reuseaddr",
                                                            f"TCP:127.0.0.1:{port}"], stderr=fwlog))
            for ns, _ in net.members:
                self.forwarders.append(procs.spawn(ns, ["socat", f"TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr",
                                                        f"TCP:{net.broker_ip}:{port}"], stderr=fwlog))
        fwlog.close()
        for proc, port in zip(self.forwarders, [p for p in self.ports for _ in range(1 + len(net.members))]):
            if not listening(proc.pid, port):
                raise RuntimeError(f"socat forwarder for port {port} is not listening (exit {proc.poll()})")

    def stop(self):
        for proc in self.forwarders:
            Processes.stop(proc, timeout=5)
        Processes.stop(self.proc, timeout=30)
        self.log.close()
        # The forwarders' per-connection children, if any are still there (never this process).
        for ns in [self.net.broker] + [ns for ns, _ in self.net.members]:
            Network.kill_inside(ns)


class Member:
    """One member host's `pushworker run`, its log (JSON lines) and the partitions it says it holds."""

    def __init__(self, index, ns, ip, exe, workdir, cluster, group, static, procs, delay_ms, debug=None):
        self.index, self.ns, self.ip, self.exe, self.workdir = index, ns, ip, exe, workdir
        self.name = f"m{index}"
        self.procs, self.cluster = procs, cluster
        consumer = {"session.timeout.ms": SESSION_TIMEOUT_MS, "heartbeat.interval.ms": HEARTBEAT_MS}
        if static:
            consumer["group.instance.id"] = f"{group}-{self.name}"
        if debug:
            consumer["debug"] = debug
        self.config = os.path.join(workdir, f"{self.name}.json5")
        with open(self.config, "w") as f:
            json.dump({"groupId": group, "inputTopics": [INPUT], "resultsTopic": RESULTS, "retries": {"topic": RETRIES},
                       "consumer": consumer,
                       "workers": {"job": {"kind": "noop", "result": "newData", "delayMs": delay_ms}},
                       "httpServer": {"host": ip, "port": HTTP_PORT},
                       "statusPage": {"enabled": False},
                       "log": {"level": "debug" if debug else "info", "format": "json", "progressIntervalMs": 5000}},
                      f, indent=2)
        self.proc = None
        self.starts = 0
        self.held = set()
        self.events = []          # (unix time, member, kind, partitions)
        self.problems = []        # error/critical log lines
        self._log = None
        self._offset = 0
        self._partial = b""
        self.exits = []           # (how, status)

    def start(self):
        self.poll()
        self.starts += 1
        self._log = os.path.join(self.workdir, f"{self.name}.{self.starts}.log")
        self._offset, self._partial, self.held = 0, b"", set()
        with open(self._log, "ab") as err:
            self.proc = self.procs.spawn(self.ns, [self.exe, "run", "--config", self.config, "--bootstrap-servers",
                                                   self.cluster.bootstrap], stderr=err, cwd=self.workdir)
        self.events.append((time.time(), self.name, "started", ""))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def poll(self):
        """Reads the new lines of the current log."""
        if not self._log or not os.path.exists(self._log):
            return
        with open(self._log, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        self._offset += len(data)
        data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()
        for raw in lines:
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            message = entry.get("message", "")
            parts = set(filter(None, entry.get("partitions", "").split(",")))
            when = iso_seconds(entry["time"]) if "time" in entry else time.time()
            kind = None
            if message == "partitions assigned":
                self.held |= parts
                kind = "assigned"
            elif message.startswith("partitions revoked") and parts:
                self.held -= parts
                # One event per revocation: its first line ("finishing …" or "the service is stopping …");
                # the warnings that may follow name the same partitions.
                kind = "revoked" if message.startswith(("partitions revoked: finishing", "partitions revoked: the service")) else None
            elif message.startswith("partitions lost") and parts:
                self.held -= parts
                kind = "lost"
            elif message == "stopped":
                kind = "stopped"
            if kind:
                self.events.append((when, self.name, kind, ",".join(sorted(parts))))
            if entry.get("level") in ("error", "critical"):
                self.problems.append(raw.decode(errors="replace")[:400])

    def holds(self):
        return set(self.held) if self.alive() else set()

    def signal(self, sig):
        os.kill(self.proc.pid, sig)

    def stop(self, timeout=60, signalled=False):
        """SIGTERM (unless `signalled` already: a second one would stop it at once) and wait; returns the
        exit status (None if it had to be killed) and the seconds it took."""
        started = time.monotonic()
        status = None
        if self.proc.poll() is None:
            if not signalled:
                os.kill(self.proc.pid, signal.SIGTERM)
            try:
                status = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                Processes.stop(self.proc, signal.SIGKILL)
        else:
            status = self.proc.returncode
        self.poll()
        self.exits.append(("SIGTERM", status))
        self.events.append((time.time(), self.name, f"exited {status}", ""))
        return status, time.monotonic() - started

    def kill(self):
        self.signal(signal.SIGKILL)
        self.proc.wait(10)
        self.poll()
        self.exits.append(("SIGKILL", self.proc.returncode))
        self.events.append((time.time(), self.name, "killed", ""))

    def metrics(self):
        """A few counters of its /metrics (over its own address), or None."""
        try:
            with urllib.request.urlopen(f"http://{self.ip}:{HTTP_PORT}/metrics", timeout=3) as response:
                text = response.read().decode()
        except OSError:
            return None
        wanted = {}
        for line in text.splitlines():
            for name in ("pushworker_assigned_partitions", "pushworker_rebalances_total",
                         "pushworker_jobs_cut_short_by_rebalance_total", "pushworker_revocation_commit_failures_total"):
                if line.startswith(name + " ") or line.startswith(name + "{"):
                    key = line.rsplit(" ", 1)[0].replace("pushworker_", "")
                    wanted[key] = float(line.rsplit(" ", 1)[1])
        return wanted
