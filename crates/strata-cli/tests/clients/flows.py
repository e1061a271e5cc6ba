#!/usr/bin/env python3
"""Drives a running `strata serve` with clients no one here wrote: boto3 and the AWS CLI.

    flows.py boto3  URL            create -> put -> query -> update with condition -> transact -> scan -> delete
    flows.py awscli URL            the same with `aws dynamodb ... --endpoint-url URL`
    flows.py auth   URL KEY SECRET signed requests pass with the right key pair, fail with a wrong one

Exits non-zero (with the failing step) on any mismatch; prints `ok <flow>` at the end.
"""
import json
import os
import subprocess
import sys
import uuid
from decimal import Decimal

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError


def client(url, key="strata", secret="strata"):
    return boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1",
                        aws_access_key_id=key, aws_secret_access_key=secret,
                        config=Config(retries={"max_attempts": 0}))


def expect_error(code, fn, *a, **kw):
    try:
        fn(*a, **kw)
    except ClientError as e:
        got = e.response["Error"]["Code"]
        assert got == code, f"expected {code}, got {got}: {e}"
        return e.response
    raise AssertionError(f"expected {code}, the call succeeded")


def boto3_flow(url):
    db = boto3.resource("dynamodb", endpoint_url=url, region_name="us-east-1",
                        aws_access_key_id="strata", aws_secret_access_key="strata")
    # The resource's own client converts Python values; `c` is a plain low-level client.
    c = client(url)
    name = "clients_" + uuid.uuid4().hex[:8]
    table = db.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "N"}],
        BillingMode="PAY_PER_REQUEST")
    table.wait_until_exists()
    assert name in c.list_tables()["TableNames"]
    # put
    for i in range(10):
        table.put_item(Item={"pk": "user#1", "sk": i, "n": Decimal("0.1234567890123456789012345"),
                             "tags": {"a", "b"}, "doc": {"l": [1, "x", None, True]}, "v": i * 10})
    table.put_item(Item={"pk": "user#2", "sk": 1, "v": 5})
    got = table.get_item(Key={"pk": "user#1", "sk": 3}, ConsistentRead=True)["Item"]
    assert got["n"] == Decimal("0.1234567890123456789012345"), got
    assert got["tags"] == {"a", "b"} and got["doc"]["l"] == [1, "x", None, True], got
    # query
    from boto3.dynamodb.conditions import Attr, Key
    r = table.query(KeyConditionExpression=Key("pk").eq("user#1") & Key("sk").between(2, 5))
    assert [int(i["sk"]) for i in r["Items"]] == [2, 3, 4, 5], r["Items"]
    r = table.query(KeyConditionExpression=Key("pk").eq("user#1"), ScanIndexForward=False, Limit=3)
    assert [int(i["sk"]) for i in r["Items"]] == [9, 8, 7] and "LastEvaluatedKey" in r, r
    # update with a condition
    r = table.update_item(Key={"pk": "user#1", "sk": 1}, UpdateExpression="SET v = v + :d, #s = :s",
                          ConditionExpression="v = :old", ExpressionAttributeNames={"#s": "status"},
                          ExpressionAttributeValues={":d": 5, ":old": 10, ":s": "ok"}, ReturnValues="ALL_NEW")
    assert r["Attributes"]["v"] == 15 and r["Attributes"]["status"] == "ok", r
    expect_error("ConditionalCheckFailedException", table.update_item, Key={"pk": "user#1", "sk": 1},
                 UpdateExpression="SET v = :x", ConditionExpression="v = :old",
                 ExpressionAttributeValues={":x": 0, ":old": 10})
    assert table.get_item(Key={"pk": "user#1", "sk": 1})["Item"]["v"] == 15
    # transact: all applied
    c.transact_write_items(TransactItems=[
        {"Put": {"TableName": name, "Item": {"pk": {"S": "user#3"}, "sk": {"N": "1"}, "v": {"N": "1"}},
                 "ConditionExpression": "attribute_not_exists(pk)"}},
        {"Update": {"TableName": name, "Key": {"pk": {"S": "user#2"}, "sk": {"N": "1"}},
                    "UpdateExpression": "ADD v :one", "ExpressionAttributeValues": {":one": {"N": "1"}}}},
        {"ConditionCheck": {"TableName": name, "Key": {"pk": {"S": "user#1"}, "sk": {"N": "0"}},
                            "ConditionExpression": "attribute_exists(pk)"}},
        {"Delete": {"TableName": name, "Key": {"pk": {"S": "user#1"}, "sk": {"N": "9"}}}},
    ])
    assert table.get_item(Key={"pk": "user#2", "sk": 1})["Item"]["v"] == 6
    assert "Item" in table.get_item(Key={"pk": "user#3", "sk": 1})
    assert "Item" not in table.get_item(Key={"pk": "user#1", "sk": 9})
    # transact: one condition fails, nothing applied
    r = expect_error("TransactionCanceledException", c.transact_write_items, TransactItems=[
        {"Put": {"TableName": name, "Item": {"pk": {"S": "user#4"}, "sk": {"N": "1"}}}},
        {"ConditionCheck": {"TableName": name, "Key": {"pk": {"S": "nobody"}, "sk": {"N": "0"}},
                            "ConditionExpression": "attribute_exists(pk)"}},
    ])
    codes = [x["Code"] for x in r["CancellationReasons"]]
    assert codes == ["None", "ConditionalCheckFailed"], r
    assert "Item" not in table.get_item(Key={"pk": "user#4", "sk": 1})
    # batches
    with table.batch_writer() as b:
        for i in range(30):
            b.put_item(Item={"pk": "batch", "sk": i})
    r = c.batch_get_item(RequestItems={name: {"Keys": [{"pk": {"S": "batch"}, "sk": {"N": str(i)}} for i in range(30)]}})
    assert len(r["Responses"][name]) == 30, r
    # scan with a filter, paginated
    items, kw = [], {}
    while True:
        r = table.scan(FilterExpression=Attr("v").gte(15), Limit=7, **kw)
        items += r["Items"]
        if "LastEvaluatedKey" not in r:
            break
        kw = {"ExclusiveStartKey": r["LastEvaluatedKey"]}
    assert sorted(int(i["v"]) for i in items) == [15, 20, 30, 40, 50, 60, 70, 80], items
    assert c.describe_table(TableName=name)["Table"]["TableStatus"] == "ACTIVE"
    # delete
    table.delete()
    expect_error("ResourceNotFoundException", c.describe_table, TableName=name)


def aws(url, *args):
    exe = os.path.join(os.path.dirname(sys.executable), "aws")
    env = dict(os.environ, AWS_ACCESS_KEY_ID="strata", AWS_SECRET_ACCESS_KEY="strata",
               AWS_DEFAULT_REGION="us-east-1", AWS_PAGER="", AWS_MAX_ATTEMPTS="1")
    env.pop("AWS_PROFILE", None)
    p = subprocess.run([exe, "dynamodb", *args, "--endpoint-url", url, "--output", "json"],
                       capture_output=True, text=True, env=env)
    return p.returncode, (json.loads(p.stdout) if p.stdout.strip() else None), p.stderr


def aws_ok(url, *args):
    code, out, err = aws(url, *args)
    assert code == 0, f"aws dynamodb {args[0]} failed ({code}): {err}"
    return out


def awscli_flow(url):
    name = "cli_" + uuid.uuid4().hex[:8]
    aws_ok(url, "create-table", "--table-name", name,
           "--attribute-definitions", "AttributeName=pk,AttributeType=S", "AttributeName=sk,AttributeType=S",
           "--key-schema", "AttributeName=pk,KeyType=HASH", "AttributeName=sk,KeyType=RANGE",
           "--billing-mode", "PAY_PER_REQUEST")
    aws_ok(url, "wait", "table-exists", "--table-name", name)
    for sk, v in [("a", 1), ("b", 2), ("c", 3)]:
        aws_ok(url, "put-item", "--table-name", name,
               "--item", json.dumps({"pk": {"S": "p"}, "sk": {"S": sk}, "v": {"N": str(v)}}))
    out = aws_ok(url, "query", "--table-name", name, "--key-condition-expression", "pk = :p AND sk >= :s",
                 "--expression-attribute-values", json.dumps({":p": {"S": "p"}, ":s": {"S": "b"}}))
    assert [i["sk"]["S"] for i in out["Items"]] == ["b", "c"], out
    out = aws_ok(url, "update-item", "--table-name", name, "--key", json.dumps({"pk": {"S": "p"}, "sk": {"S": "a"}}),
                 "--update-expression", "SET v = v + :one", "--condition-expression", "v = :v",
                 "--expression-attribute-values", json.dumps({":one": {"N": "1"}, ":v": {"N": "1"}}),
                 "--return-values", "UPDATED_NEW")
    assert out["Attributes"]["v"]["N"] == "2", out
    code, _, err = aws(url, "update-item", "--table-name", name, "--key", json.dumps({"pk": {"S": "p"}, "sk": {"S": "a"}}),
                       "--update-expression", "SET v = :z", "--condition-expression", "v = :v",
                       "--expression-attribute-values", json.dumps({":z": {"N": "0"}, ":v": {"N": "1"}}))
    assert code != 0 and "ConditionalCheckFailedException" in err, err
    aws_ok(url, "transact-write-items", "--transact-items", json.dumps([
        {"Put": {"TableName": name, "Item": {"pk": {"S": "p"}, "sk": {"S": "d"}, "v": {"N": "4"}}}},
        {"Delete": {"TableName": name, "Key": {"pk": {"S": "p"}, "sk": {"S": "c"}}}},
    ]))
    code, _, err = aws(url, "transact-write-items", "--transact-items", json.dumps([
        {"Put": {"TableName": name, "Item": {"pk": {"S": "p"}, "sk": {"S": "e"}}}},
        {"ConditionCheck": {"TableName": name, "Key": {"pk": {"S": "p"}, "sk": {"S": "zz"}},
                            "ConditionExpression": "attribute_exists(pk)"}},
    ]))
    assert code != 0 and "TransactionCanceledException" in err, err
    out = aws_ok(url, "scan", "--table-name", name)
    assert sorted(i["sk"]["S"] for i in out["Items"]) == ["a", "b", "d"], out
    out = aws_ok(url, "scan", "--table-name", name, "--select", "COUNT")
    assert out["Count"] == 3, out
    out = aws_ok(url, "get-item", "--table-name", name, "--key", json.dumps({"pk": {"S": "p"}, "sk": {"S": "a"}}))
    assert out["Item"]["v"]["N"] == "2", out
    aws_ok(url, "delete-table", "--table-name", name)
    code, _, err = aws(url, "describe-table", "--table-name", name)
    assert code != 0 and "ResourceNotFoundException" in err, err


def auth_flow(url, key, secret):
    good = client(url, key, secret)
    good.list_tables()
    expect_error("InvalidSignatureException", client(url, key, secret + "x").list_tables)
    expect_error("UnrecognizedClientException", client(url, key + "x", secret).list_tables)
    name = "auth_" + uuid.uuid4().hex[:8]
    good.create_table(TableName=name, KeySchema=[{"AttributeName": "p", "KeyType": "HASH"}],
                      AttributeDefinitions=[{"AttributeName": "p", "AttributeType": "S"}],
                      BillingMode="PAY_PER_REQUEST")
    good.put_item(TableName=name, Item={"p": {"S": "h\u00e9llo \u2603"}, "body": {"S": "x" * 100000}})
    assert good.get_item(TableName=name, Key={"p": {"S": "h\u00e9llo \u2603"}})["Item"]["body"]["S"] == "x" * 100000
    good.delete_table(TableName=name)


if __name__ == "__main__":
    flow, url = sys.argv[1], sys.argv[2]
    {"boto3": lambda: boto3_flow(url), "awscli": lambda: awscli_flow(url),
     "auth": lambda: auth_flow(url, sys.argv[3], sys.argv[4])}[flow]()
    print("ok", flow)
