"""The deterministic record set every compat client produces.

The same rules are spelled out in java/.../Main.java and js/roundtrip.js so
all clients exercise null/empty keys and values, a large value, headers with
a null value and duplicate header keys, and explicit create timestamps.
"""

RECORDS = 1000
BASE_TS = 1_700_000_000_000


def gen(i, null_header_value=True):
    """Return (key, value, headers, timestamp_ms) for record i.

    kafka-python cannot send a header with a null value; it passes
    null_header_value=False to get an empty one instead.
    """
    if i % 7 == 0:
        key = None
    elif i % 11 == 0:
        key = b""
    else:
        key = b"key-%d" % i
    if i % 13 == 0 and key is not None:  # kafka-python refuses null key + null value
        value = None
    elif i % 17 == 0:
        value = b""
    else:
        n = (i * 37) % 300 + (20000 if i % 100 == 1 else 0)
        value = bytes(((i * 31 + j) & 0xFF) for j in range(n))
    if i % 3 == 1:
        headers = [("h1", b"v-%d" % i)]
    elif i % 3 == 2:
        headers = [("h1", b"a"), ("h2", None if null_header_value else b""), ("h1", b"dup")]
    else:
        headers = []
    return key, value, headers, BASE_TS + i


def norm_headers(headers):
    """Headers as a list of (str, bytes|None) whatever the client returns."""
    out = []
    for k, v in headers or []:
        if isinstance(k, bytes):
            k = k.decode()
        out.append((k, v))
    return out


def compare(i, key, value, headers, ts, null_header_value=True):
    """Describe how a consumed record differs from gen(i), or None."""
    wkey, wvalue, wheaders, wts = gen(i, null_header_value)
    if key != wkey:
        return "record %d key %r, want %r" % (i, key, wkey)
    if value != wvalue:
        return "record %d value differs (want %s bytes, got %s)" % (
            i, None if wvalue is None else len(wvalue), None if value is None else len(value))
    if ts != wts:
        return "record %d timestamp %r, want %r" % (i, ts, wts)
    if norm_headers(headers) != wheaders:
        return "record %d headers %r, want %r" % (i, norm_headers(headers), wheaders)
    return None


def check_round_robin(got, partitions, null_header_value=True):
    """Check records i = p + k*partitions landed at offset k of partition p.

    got maps partition -> list of (offset, key, value, headers, timestamp),
    in the order consumed. Returns a list of error strings.
    """
    errors = []
    for p in range(partitions):
        want = list(range(p, RECORDS, partitions))
        recs = got.get(p, [])
        if len(recs) != len(want):
            errors.append("partition %d: got %d records, want %d" % (p, len(recs), len(want)))
        for pos, (i, (offset, key, value, headers, ts)) in enumerate(zip(want, recs)):
            diff = compare(i, key, value, headers, ts, null_header_value)
            if offset != pos:
                diff = "record %d has offset %d, want %d" % (i, offset, pos)
            if diff:
                errors.append("partition %d: %s" % (p, diff))
                break
    return errors
