# Signs one request with botocore (AWS's own Python SDK core, installed with moto by
# scripts/bootstrap) at a fixed time, and prints its Authorization header: what berth's SigV4
# signer is held to (tests/crypto/aws_sigv4_test.cpp).
import datetime, sys, json
import botocore.auth, botocore.awsrequest, botocore.credentials
class Fixed(datetime.datetime):
    @classmethod
    def utcnow(cls): return cls(2026, 1, 2, 3, 4, 5)
    @classmethod
    def now(cls, tz=None): return cls(2026, 1, 2, 3, 4, 5, tzinfo=tz)
botocore.auth.datetime.datetime = Fixed
spec = json.loads(sys.argv[1])
creds = botocore.credentials.Credentials(spec["key"], spec["secret"], spec.get("token") or None)
req = botocore.awsrequest.AWSRequest(method=spec["method"], url=spec["url"], data=spec["body"].encode(), headers=spec["headers"])
auth = (botocore.auth.S3SigV4Auth if spec["service"] == "s3" else botocore.auth.SigV4Auth)(creds, spec["service"], spec["region"])
auth.add_auth(req)
print(req.headers["Authorization"])
