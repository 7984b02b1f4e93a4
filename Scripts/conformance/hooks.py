"""Schemathesis hooks that let a run reach KeyVault's signed routes.

Loaded by Scripts/conformance.sh through SCHEMATHESIS_HOOKS. The device is one that
`keyctl init` made in a temporary home (KEYVAULT_CONFORMANCE_HOME): its Ed25519 seed
is in the home's device.json (docs/formats/device-home.md).

How it fits schemathesis:
- `DeviceSignature` is an auth provider. Schemathesis then knows the credentials are
  real (its `ignored_auth` check sends probes without them and expects 401), and it
  drops the values it generated for the security schemes. `set` puts a placeholder
  in KeyVault-Signature and points the case at the test account.
- `before_call` hands `requests` a `SignRequest`, which signs the request as it is
  finally sent: method, path, raw query and the exact body bytes
  (docs/formats/request-signature.md). Probes are sent without it, so they carry the
  placeholder or nothing and are refused with 401.

The hooks also count the answers to signed requests by status, and write them to
KEYVAULT_CONFORMANCE_TALLY at exit, so the script can check that signed routes were
reached (answered other than 401).
"""

from __future__ import annotations

import atexit
import base64
import hashlib
import json
import os
import re
import secrets
import struct
import time
from collections import Counter
from urllib.parse import urlsplit

import requests
import schemathesis
from nacl.signing import SigningKey

PLACEHOLDER = "to-be-signed"
HEX32 = re.compile(r"^[0-9a-f]{32}$")
# openapi.json's content address: a UInt32 generation (1 to 4294967295) and 64 hex digits.
ADDRESS = re.compile(r"^ca1\.(?:[1-9][0-9]{0,8}|[1-3][0-9]{9}|4[01][0-9]{8}|42[0-8][0-9]{7}|429[0-3][0-9]{6}|4294[0-8][0-9]{5}"
                     r"|42949[0-5][0-9]{4}|429496[0-6][0-9]{3}|4294967[01][0-9]{2}|42949672[0-8][0-9]|429496729[0-5])\.[0-9a-f]{64}$")

_home = os.environ["KEYVAULT_CONFORMANCE_HOME"]
with open(os.path.join(_home, "device.json"), encoding="utf-8") as _file:
    _device = json.load(_file)
ACCOUNT: str = _device["account"]
DEVICE: str = _device["device"]
_KEY = SigningKey(bytes.fromhex(_device["secrets"]["signingSeed"]))
# A member and an attachment the script stored, so that their routes can answer 200.
MEMBER = os.environ.get("KEYVAULT_CONFORMANCE_MEMBER", "")
ADDRESS_STORED = os.environ.get("KEYVAULT_CONFORMANCE_ADDRESS", "")
# A pending device-link request on the account, so that its routes answer more than 404.
LINK_CODE = os.environ.get("KEYVAULT_CONFORMANCE_LINK_CODE", "")
CODE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{10}$")

TALLY: Counter[str] = Counter()


def _short(data: bytes) -> bytes:
    return struct.pack(">B", len(data)) + data


def _long(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def signed_bytes(method: str, path: str, query: str, body: bytes, timestamp: int, nonce: str, device: str) -> bytes:
    """docs/formats/request-signature.md, version 1."""
    return (b"keyvault/v1/request\x00" + _short(method.upper().encode()) + _long(path.encode()) + _long(query.encode())
            + hashlib.sha256(body).digest() + struct.pack(">Q", timestamp) + _short(nonce.encode()) + _short(device.encode()))


class SignRequest(requests.auth.AuthBase):
    """Signs a prepared request that carries the placeholder, as the test device."""

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        if request.headers.get("KeyVault-Signature") != PLACEHOLDER:
            return request
        for name in ("KeyVault-Session", "KeyVault-MAC"):
            request.headers.pop(name, None)
        url = urlsplit(request.url)
        if request.method.upper() == "DELETE" and url.path.rstrip("/") == f"/v1/accounts/{ACCOUNT}":
            # The stateful phase can find the test account's id in an answer and delete
            # it, which would end the run's device: that request goes unsigned (401).
            del request.headers["KeyVault-Signature"]
            return request
        body = request.body or b""
        if isinstance(body, str):
            body = body.encode()
        timestamp = int(time.time())
        nonce = secrets.token_hex(16)
        signature = _KEY.sign(signed_bytes(request.method, url.path, url.query, body, timestamp, nonce, DEVICE)).signature
        request.headers["KeyVault-Device"] = DEVICE
        request.headers["KeyVault-Timestamp"] = str(timestamp)
        request.headers["KeyVault-Nonce"] = nonce
        request.headers["KeyVault-Signature"] = base64.b64encode(signature).decode()
        return request


@schemathesis.auth(refresh_interval=None)  # get() answers per operation: nothing to cache
class DeviceSignature:
    def get(self, case, ctx):
        # Only the routes the description says are signed: the others stay as a stranger sends them.
        return DEVICE if case.operation.definition.raw.get("security") else None

    def set(self, case, data, ctx):
        case.headers = dict(case.headers or {})
        case.headers["KeyVault-Signature"] = PLACEHOLDER
        # Deleting the account would end the run's device: that one is signed for
        # whatever account was generated (a stranger's: 403 wrong_account).
        if not (case.method.upper() == "DELETE" and case.path == "/v1/accounts/{account}"):
            point_at_test_data(case)


def point_at_test_data(case) -> None:
    """Path parameters of the right form name the test account, member, attachment and
    link request. Values of the wrong form stay, so that cases made to be invalid stay so."""
    parameters = case.path_parameters
    if not isinstance(parameters, dict):
        return
    if HEX32.match(str(parameters.get("account", ""))):
        parameters["account"] = ACCOUNT
    if MEMBER and HEX32.match(str(parameters.get("member", ""))):
        parameters["member"] = MEMBER
    if ADDRESS_STORED and ADDRESS.match(str(parameters.get("address", ""))) and case.method.upper() == "GET":
        parameters["address"] = ADDRESS_STORED
    if LINK_CODE and CODE.match(str(parameters.get("code", ""))):
        parameters["code"] = LINK_CODE


def device_id(signing_key: bytes) -> str:
    """docs/formats/account-chain.md: the first 16 bytes of SHA-256 over the domain and the key."""
    return hashlib.sha256(b"keyvault/v1/device-id\x00" + signing_key).digest()[:16].hex()


def new_device_fields() -> dict[str, str]:
    """A new device's signing key and the id derived from it."""
    key = SigningKey.generate().verify_key.encode()
    return {"signingKey": key.hex(), "device": device_id(key)}


def create_link_request(server: str) -> str:
    """Asks to join the test account as a new device; returns the request's code."""
    body = {**new_device_fields(), "name": "tablet", "boxKey": secrets.token_hex(32), "commitment": secrets.token_hex(32)}
    response = requests.post(f"{server}/v1/accounts/{ACCOUNT}/link-requests", json=body, timeout=10)
    response.raise_for_status()
    return response.json()["code"]


@schemathesis.hook
def before_call(context, case, kwargs):
    if (case.headers or {}).get("KeyVault-Signature") == PLACEHOLDER:
        kwargs["auth"] = SignRequest()
    else:
        # Open routes of the test account (its recovery slot, challenges, link requests)
        # answer more than 404.
        point_at_test_data(case)
    # A new device's link request names its id, derived from its signing key, which
    # no schema can say: a well-formed body gets a real key and its id, so that the
    # server's answer to a valid request (201, or 429 past five) is what is tested.
    body = case.body
    if (case.method.upper() == "POST" and case.path == "/v1/accounts/{account}/link-requests" and isinstance(body, dict)
            and re.match(r"^[0-9a-fA-F]{64}$", str(body.get("signingKey", ""))) and HEX32.match(str(body.get("device", "")))):
        body.update(new_device_fields())


@schemathesis.hook
def after_call(context, case, response):
    request_headers = response.request.headers
    if request_headers.get("KeyVault-Signature") not in (None, PLACEHOLDER):
        TALLY[str(response.status_code)] += 1
        if response.status_code == 401:
            try:
                TALLY["401 " + json.loads(response.content)["error"]["code"]] += 1
            except (ValueError, KeyError, TypeError):
                pass


# A schema-valid request that the server refuses (ST202) is a failure of the
# description, unless what it failed is a check no JSON Schema can state: a signature
# or a key derived from another field, a chain position, a binary framing, a
# commitment. The server names those with their own codes (docs/api.md), and only
# they are forgiven; `bad_request` (a shape the description should have refused)
# is not. Each forgiven refusal is counted and printed, so a run shows what it did
# not hold against the server.
CONTENT_CHECKS = {
    "malformed_link", "malformed_attachment", "box_position", "wrong_generation", "unknown_signer",
    "unknown_recipient", "unknown_member", "no_such_device", "already_revoked", "last_device", "bad_reveal",
}
FORGIVEN: Counter[str] = Counter()


@schemathesis.hook
def filter_failure(context, failure, case, response):
    if getattr(failure, "code", None) != "ST202" or response.status_code != 400:
        return True
    try:
        error = json.loads(response.content)["error"]
    except (ValueError, KeyError, TypeError):
        return True
    if error.get("code") in CONTENT_CHECKS:
        FORGIVEN[f"{case.method.upper()} {case.path}: {error['code']}"] += 1
        return False
    return True


@atexit.register
def _write_tally() -> None:
    path = os.environ.get("KEYVAULT_CONFORMANCE_TALLY")
    if path:
        with open(path, "w", encoding="utf-8") as file:
            json.dump({"signed": dict(TALLY), "forgiven": dict(FORGIVEN)}, file, sort_keys=True)
