#!/usr/bin/env python3
"""What a browser does with an ML-DSA credential, measured: a fresh headless Chromium or Firefox
ESR (e2e_browser.py's launchers and page), a relying party that accepts ML-DSA-44 only, and a key
that makes it (the only FIDO device in sight). Prints one `MEASURED …` line (made and verified,
refused with the page's error, or no answer), which the README reports; exits 0 for any of those,
1 when the flow itself breaks, 77 when the browser cannot start. Usage: e2e_mldsa.py WORK BROWSER"""

import signal
import sys

import e2e_browser


def main(work, browser_name):
    opener, label = {"chromium": (e2e_browser.open_chromium, "headless Chromium"),
                     "firefox": (e2e_browser.open_firefox, "headless Firefox ESR")}[browser_name]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    httpd = e2e_browser.http.server.ThreadingHTTPServer(("127.0.0.1", e2e_browser.PORT), e2e_browser.Page)
    e2e_browser.threading.Thread(target=httpd.serve_forever, daemon=True).start()
    browser = None
    try:
        for attempt in (1, 2):
            browser, _why = opener(work, attempt)
            if browser is not None:
                break
        if browser is None:
            print(f"NOT RUN: {label} did not start or load the test page in two attempts", flush=True)
            return 77
        e2e_browser.probe_mldsa(browser, label)
    finally:
        if browser is not None:
            browser.quit()
        httpd.shutdown()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[2] not in ("chromium", "firefox"):
        sys.exit(__doc__.split("Usage: ")[1].strip())
    sys.exit(main(sys.argv[1], sys.argv[2]))
