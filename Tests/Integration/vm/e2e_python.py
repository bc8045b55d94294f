#!/usr/bin/env python3
"""python-fido2 2.2.1 against Latchkey over the ordinary hidraw path (no custom connection):
register and authenticate, verified by Fido2Server as a relying party. Usage: e2e_python.py /dev/hidrawN"""

import os
import sys

from fido2.attestation import AttestationType, PackedAttestation
from fido2.client import DefaultClientDataCollector, Fido2Client
from fido2.hid import open_device
from fido2.server import Fido2Server
from fido2.webauthn import AttestationConveyancePreference, ResidentKeyRequirement, UserVerificationRequirement


def verify_packed(attestation_object, client_data_hash):
    result = PackedAttestation().verify(attestation_object.att_stmt, attestation_object.auth_data, client_data_hash)
    assert result.attestation_type == AttestationType.BASIC


def main(path):
    # Opened by path: listing would open (and INIT) every FIDO device, the proxy step's real key too.
    device = open_device(path)
    print(f"found {device} product={device.product_name!r} vid={device.descriptor.vid:04x}")
    client = Fido2Client(device, client_data_collector=DefaultClientDataCollector("https://example.com"))
    server = Fido2Server({"id": "example.com", "name": "Example"}, attestation=AttestationConveyancePreference.DIRECT,
                         verify_attestation=verify_packed)
    for resident in (False, True):
        user = {"id": os.urandom(16), "name": "hidraw-user", "displayName": "Hidraw User"}
        options, state = server.register_begin(
            user, resident_key_requirement=ResidentKeyRequirement.REQUIRED if resident else ResidentKeyRequirement.DISCOURAGED,
            user_verification=UserVerificationRequirement.DISCOURAGED)
        credential = server.register_complete(state, client.make_credential(options.public_key)).credential_data
        request, state = server.authenticate_begin(None if resident else [credential],
                                                   user_verification=UserVerificationRequirement.DISCOURAGED)
        response = client.get_assertion(request.public_key).get_response(0)
        server.authenticate_complete(state, [credential], response)
        print(f"registered and authenticated (resident={resident})")


if __name__ == "__main__":
    main(sys.argv[1])
