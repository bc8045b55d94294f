"""What the Python check scripts share (the socket suite's and the VM rig's): one check's
PASS/FAIL line with its time, the list of results, and closing devices that may be gone."""

import functools
import time
import traceback

RESULTS = []


def check(name):
    """A check: PASS/FAIL line with the time taken (or the exception's text); the run goes on."""
    def decorator(function):
        @functools.wraps(function)
        def run(*args):
            started = time.time()
            try:
                function(*args)
                RESULTS.append((name, True))
                print(f"PASS  {name} ({time.time() - started:.2f} s)", flush=True)
            except Exception as error:  # noqa: BLE001 - every failure is reported, the checks go on
                RESULTS.append((name, False))
                print(f"FAIL  {name}: {type(error).__name__}: {error}", flush=True)
                traceback.print_exc(limit=4)
        run.check_name = name
        return run
    return decorator


def close_quietly(devices):
    """Closes each of `devices`, ignoring those already gone."""
    for device in devices:
        try:
            device.close()
        except Exception:  # noqa: BLE001 - closing what may already be gone
            pass
