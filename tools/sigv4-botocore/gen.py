#!/usr/bin/env python3
"""Writes vectors/sigv4-botocore.json: requests signed by botocore's SigV4Auth (the signer every
boto3/AWS CLI request goes through), at a fixed time, for strata-server's signature tests.
Run: python3 tools/sigv4-botocore/gen.py > vectors/sigv4-botocore.json  (needs `pip install botocore`)."""
import datetime, json, sys
from unittest import mock

import botocore
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

FIXED = datetime.datetime(2024, 1, 1, 0, 0, 0)


class FixedClock(datetime.datetime):
    @classmethod
    def utcnow(cls):
        return FIXED

    @classmethod
    def now(cls, tz=None):
        return FIXED.replace(tzinfo=tz) if tz else FIXED


CASES = [
    ("describe", "http://127.0.0.1:8000/", "DescribeTable", b'{"TableName": "t"}', {}, None),
    ("put_unicode", "http://localhost:8000/", "PutItem",
     '{"TableName": "t", "Item": {"p": {"S": "h\u00e9llo \u2603"}}}'.encode(), {}, None),
    ("empty_body", "http://127.0.0.1:8000/", "ListTables", b"", {}, None),
    ("session_token", "http://127.0.0.1:8000/", "ListTables", b"{}", {}, "FwoGZXIvYXdzEXAMPLETOKEN"),
    ("spaces_in_header", "http://127.0.0.1:8000/", "Scan", b'{"TableName": "t"}',
     {"X-Custom": "  a   b  "}, None),
    ("query_string", "http://127.0.0.1:8000/?b=2&a=1%2F", "Scan", b'{"TableName": "t"}', {}, None),
]

out = {
    "source": f"botocore {botocore.__version__} SigV4Auth(service='dynamodb', region='us-east-1'), clock fixed at 2024-01-01T00:00:00Z; tools/sigv4-botocore/gen.py",
    "access_key_id": "AKIDEXAMPLE",
    "secret_access_key": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    "now_unix": 1704067200,
    "cases": [],
}
with mock.patch("botocore.auth.datetime.datetime", FixedClock):
    for name, url, op, body, extra, token in CASES:
        headers = {"X-Amz-Target": "DynamoDB_20120810." + op, "Content-Type": "application/x-amz-json-1.0"}
        headers.update(extra)
        req = AWSRequest(method="POST", url=url, data=body, headers=headers)
        creds = Credentials(out["access_key_id"], out["secret_access_key"], token)
        SigV4Auth(creds, "dynamodb", "us-east-1").add_auth(req)
        host = url.split("/")[2]
        path_and_query = "/" + url.split("/", 3)[3]
        hs = [["host", host]] + [[k.lower(), v] for k, v in req.headers.items()]
        out["cases"].append({"name": name, "method": "POST", "uri": path_and_query,
                             "headers": hs, "body_hex": body.hex()})
json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
print()
