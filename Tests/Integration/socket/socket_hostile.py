"""Socket suite: clients that try to wear the key down (issue 16): running it out of file
descriptors must leave it idle, turning clients away, with a bounded log."""

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports
from flood_support import cpu_seconds


@check("out of descriptors (ulimit -n 64, 150 clients): the key stays idle, turns clients away at once, logs a "
       "bounded number of lines, and serves a client again once they leave")
def test_descriptor_exhaustion():
    import resource

    key = Key("fdlimit", preexec=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))).start()
    clients = []
    try:
        for _ in range(150):
            # A refused client is accepted and closed, never left waiting: a full backlog
            # (EAGAIN) must clear within a few poll turns.
            clients.append(connect_nonblocking(key.socket_path, pause=0.01, note=f" ({len(clients)} clients in)"))
        time.sleep(0.5)
        before = cpu_seconds(key.process.pid)
        time.sleep(2.0)
        spent = cpu_seconds(key.process.pid) - before
        assert spent < 0.3, f"the key used {spent:.2f} s of CPU in 2 s while out of descriptors"
        last = clients[-1]
        last.setblocking(True)
        last.settimeout(3)
        assert last.recv(64) == b"", "a client past the descriptor limit sees end of stream"
        for client in clients:
            client.close()
        clients = []
        time.sleep(1.5)
        device = key.device()
        assert device.ping(b"still here") == b"still here"
        device.close()
        with open(key.log_path, errors="replace") as handle:
            refused = handle.read().count("refused a client")
        assert 0 < refused <= 60, f"{refused} 'refused a client' lines for about 100 refused clients"
        print(f"      (CPU {spent:.2f} s in 2 s while out of descriptors; {refused} log lines)", flush=True)
    finally:
        for client in clients:
            client.close()
        key.stop()
