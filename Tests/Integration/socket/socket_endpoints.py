"""Socket suite: the sites' passkey endpoints (`credentials list|show|delete --endpoints`) against a
local HTTPS server with a test CA: a valid document, `{}`, an oversized answer, a slow one, invalid
JSON, a redirect to http. The CLI runs in a private mount namespace (`unshare --mount`, root) where
/etc/hosts names the test sites 127.0.0.1 and the system CA bundle is the test CA's: nothing changes
on the machine, and the client is the real one (libcurl under URLSession, the system's trust store)."""

import datetime
import http.server
import ssl

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports

SITES = ["valid", "empty", "big", "slow", "badjson", "redirect", "missing"]
DOMAIN = "endpoints.test"


def site(name):
    return f"{name}.{DOMAIN}"


def test_ca(directory):
    """A CA and a server certificate for every test site; returns (bundle, cert, key) paths."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Latchkey endpoints test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, site("valid"))]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(site(name)) for name in SITES]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = {name: os.path.join(directory, name) for name in ("bundle.pem", "cert.pem", "key.pem", "hosts")}
    with open(paths["bundle.pem"], "wb") as handle:
        handle.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(paths["cert.pem"], "wb") as handle:
        handle.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(paths["key.pem"], "wb") as handle:
        handle.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    with open(paths["hosts"], "w") as handle:
        handle.write("127.0.0.1 localhost " + " ".join(site(name) for name in SITES) + "\n")
    return paths


class EndpointsHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, status, body, headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        name = (self.headers.get("Host") or "").split(".")[0]
        if self.path != "/.well-known/passkey-endpoints":
            return self.reply(404, b"")
        if name == "valid":
            return self.reply(200, json.dumps({"enroll": f"https://{site('valid')}/enroll", "manage": f"https://{site('valid')}/keys",
                                               "prfUsageDetails": f"https://{site('valid')}/prf", "extra": 1,
                                               "sneaky": "http://valid.endpoints.test/x"}).encode())
        if name == "empty":
            return self.reply(200, b"{}")
        if name == "big":
            return self.reply(200, json.dumps({"enroll": "https://big.endpoints.test/" + "a" * 100_000}).encode())
        if name == "slow":
            time.sleep(9)
            return self.reply(200, b"{}")
        if name == "badjson":
            return self.reply(200, b"{not json")
        if name == "redirect":
            return self.reply(302, b"", [("Location", f"http://{site('valid')}/.well-known/passkey-endpoints")])
        return self.reply(404, b"")


class EndpointsServer:
    def __init__(self, paths):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 443), EndpointsHandler)
        self.server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(paths["cert.pem"], paths["key.pem"])
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def namespaced_cli(paths, cache, *args):
    """The CLI in a private mount namespace whose /etc/hosts and CA bundle are the test's."""
    bundle = "/etc/ssl/certs/ca-certificates.crt"
    script = (f'mount --bind "$1" {bundle} && mount --bind "$2" /etc/hosts && shift 2 && exec "$@"')
    environment = dict(os.environ, XDG_CACHE_HOME=cache)
    return subprocess.run(["unshare", "--mount", "sh", "-c", script, "sh", paths["bundle.pem"], paths["hosts"], BINARY, *args],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, start_new_session=True,
                          env=environment)


def can_namespace():
    if os.geteuid() != 0 or not os.path.exists("/etc/ssl/certs/ca-certificates.crt"):
        return False
    probe = subprocess.run(["unshare", "--mount", "sh", "-c", "mount --bind /etc/hostname /etc/hostname"], capture_output=True)
    return probe.returncode == 0


@check("passkey endpoints over real HTTPS (a test CA in a private mount namespace): list --endpoints --json gives valid's "
       "enroll/manage/prfUsageDetails (an http link in the document left out), {} as no links, and names each failure — over "
       "16 KiB, no answer within 5 s, not a JSON object, a redirect off HTTPS, HTTP 404; the answers are cached (the server "
       "gone, the same result at once); show --endpoints prints the links; delete of a passkey that gave PRF outputs warns "
       "with the site's prfUsageDetails link, and a hiding signal for it warns with the cached link")
def test_passkey_endpoints():
    directory = tempfile.mkdtemp(prefix="endpoints-", dir=WORK)
    paths = test_ca(directory)
    cache = os.path.join(directory, "cache")
    key = Key("endpoints").start()
    server = None
    try:
        ctap, client_pin = ctap21_session(key)
        client_pin.set_pin(CTAP21_PIN)
        ids = {}
        for name in SITES:
            attestation, _ = ctap21_make_resident(ctap, client_pin, {"id": site(name), "name": name},
                                                  {"id": name.encode(), "name": name},
                                                  extensions={"hmac-secret": True} if name == "valid" else None)
            ids[name] = bytes(attestation.auth_data.credential_data.credential_id)
        # A PRF output for valid's passkey (Fido2Client, with UV) marks it as used.
        client = Fido2Client(key.device(), client_data_collector=DefaultClientDataCollector(f"https://{site('valid')}"),
                             user_interaction=Ctap21PinInteraction(CTAP21_PIN))
        response = client.get_assertion({"challenge": os.urandom(32), "rpId": site("valid"),
                                         "allowCredentials": [{"type": "public-key", "id": ids["valid"]}],
                                         "userVerification": "required",
                                         "extensions": {"prf": {"eval": {"first": os.urandom(32)}}}}).get_response(0)
        assert response.client_extension_results["prf"]["results"]["first"], response.client_extension_results
        key.stop()

        server = EndpointsServer(paths)
        started = time.time()
        listed = namespaced_cli(paths, cache, "credentials", "list", "--store", key.store, "--endpoints", "--json")
        took = time.time() - started
        assert listed.returncode == 0, listed.stderr
        report = json.loads(listed.stdout)
        endpoints = report["endpoints"]
        assert endpoints[site("valid")] == {"enroll": f"https://{site('valid')}/enroll", "manage": f"https://{site('valid')}/keys",
                                            "prfUsageDetails": f"https://{site('valid')}/prf"}, endpoints
        assert endpoints[site("empty")] == {"enroll": None, "manage": None, "prfUsageDetails": None}, endpoints
        assert "over 16 KiB" in endpoints[site("big")]["error"], endpoints
        assert "within 5 s" in endpoints[site("slow")]["error"] or "timed out" in endpoints[site("slow")]["error"].lower(), endpoints
        assert "not a JSON object" in endpoints[site("badjson")]["error"], endpoints
        assert "redirects off HTTPS" in endpoints[site("redirect")]["error"], endpoints
        assert "HTTP status 404" in endpoints[site("missing")]["error"], endpoints
        assert took < 30, f"the slow site held the listing {took:.1f} s"
        prf = {entry["rpId"]: entry["prfUsed"] for entry in report["credentials"]}
        assert prf[site("valid")] is True and prf[site("empty")] is False, prf

        server.stop()
        server = None
        started = time.time()
        again = namespaced_cli(paths, cache, "credentials", "list", "--store", key.store, "--endpoints", "--json")
        assert again.returncode == 0 and json.loads(again.stdout)["endpoints"] == endpoints, again.stdout
        assert time.time() - started < 5, "cached: no site asked again"

        shown = namespaced_cli(paths, cache, "credentials", "show", b64url(ids["valid"]), "--store", key.store, "--endpoints")
        assert shown.returncode == 0 and f"Manage: https://{site('valid')}/keys" in shown.stdout, shown.stdout
        # A hiding signal for it warns (with the cached link) and says it can be undone.
        signal = namespaced_cli(paths, cache, "signal", "unknown", "--rp", site("valid"), "--store", key.store, b64url(ids["valid"]))
        assert signal.returncode == 0 and "gave PRF (hmac-secret) outputs" in signal.stdout, signal.stdout + signal.stderr
        assert f"The site says what depends on it: https://{site('valid')}/prf" in signal.stdout, signal.stdout
        assert latchkey_cli("credentials", "unhide", b64url(ids["valid"]), "--store", key.store).returncode == 0
        deleted = namespaced_cli(paths, cache, "credentials", "delete", b64url(ids["valid"]), "--store", key.store, "--endpoints",
                                 "--yes")
        assert deleted.returncode == 0, deleted.stderr
        assert f"The site says what depends on it: https://{site('valid')}/prf" in deleted.stderr, deleted.stderr
        plain = latchkey_cli("credentials", "delete", b64url(ids["empty"]), "--store", key.store, "--yes")
        assert plain.returncode == 0 and "Warning" not in plain.stderr, plain.stderr
    finally:
        if server:
            server.stop()
        key.stop()


def test_endpoints():
    if not can_namespace():
        print("SKIP  passkey endpoints: needs root and `unshare --mount` (a private /etc/hosts and CA bundle); not counted",
              flush=True)
        return
    test_passkey_endpoints()
