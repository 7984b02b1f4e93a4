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
ADDRESS = re.compile(r"^ca1\.[1-9][0-9]{0,9}\.[0-9a-f]{64}$")

_home = os.environ["KEYVAULT_CONFORMANCE_HOME"]
with open(os.path.join(_home, "device.json"), encoding="utf-8") as _file:
    _device = json.load(_file)
ACCOUNT: str = _device["account"]
DEVICE: str = _device["device"]
_KEY = SigningKey(bytes.fromhex(_device["secrets"]["signingSeed"]))
# A member and an attachment the script stored, so that their routes can answer 200.
MEMBER = os.environ.get("KEYVAULT_CONFORMANCE_MEMBER", "")
ADDRESS_STORED = os.environ.get("KEYVAULT_CONFORMANCE_ADDRESS", "")

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


@schemathesis.auth()
class DeviceSignature:
    def get(self, case, ctx):
        return DEVICE

    def set(self, case, data, ctx):
        case.headers = dict(case.headers or {})
        case.headers["KeyVault-Signature"] = PLACEHOLDER
        parameters = case.path_parameters
        if not isinstance(parameters, dict):
            return
        # Deleting the account would end the run's device: that one is signed for
        # whatever account was generated (a stranger's: 403 wrong_account).
        deletes_account = case.method.upper() == "DELETE" and case.path == "/v1/accounts/{account}"
        # Replace only values that already have the right form, so that cases made
        # to be invalid stay invalid.
        if not deletes_account and HEX32.match(str(parameters.get("account", ""))):
            parameters["account"] = ACCOUNT
        if MEMBER and HEX32.match(str(parameters.get("member", ""))):
            parameters["member"] = MEMBER
        if ADDRESS_STORED and ADDRESS.match(str(parameters.get("address", ""))) and case.method.upper() == "GET":
            parameters["address"] = ADDRESS_STORED


@schemathesis.hook
def before_call(context, case, kwargs):
    if (case.headers or {}).get("KeyVault-Signature") == PLACEHOLDER:
        kwargs["auth"] = SignRequest()


@schemathesis.hook
def after_call(context, case, response):
    request_headers = response.request.headers
    if request_headers.get("KeyVault-Signature") not in (None, PLACEHOLDER):
        TALLY[str(response.status_code)] += 1


@atexit.register
def _write_tally() -> None:
    path = os.environ.get("KEYVAULT_CONFORMANCE_TALLY")
    if path:
        with open(path, "w", encoding="utf-8") as file:
            json.dump(dict(TALLY), file, sort_keys=True)
