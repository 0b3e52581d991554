/*
 * The walk over a record batch's records that a leader makes before it appends a
 * client's batch (brownout.protocol.records.scan_records), in C: on produces of small
 * records the Python loop over each record's varints was 45 % of a broker's CPU.
 *
 * scan(buf, pos, count) walks `count` records of format v2 from `pos` to the end of
 * `buf` exactly as records.scan_records' loop does and returns what it returns:
 * (records without a key, lowest and highest timestamp delta, whether the offset
 * deltas run 0, 1, 2, ...). Wherever that loop would raise, and wherever a value
 * would not fit the 64-bit integers used here (a varint of ten bytes), it returns
 * None instead: the Python loop then walks the batch again and says what is wrong.
 * So a result from here is always the Python loop's result.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* A zigzag varint of at most nine bytes at *pos (below `size`) into *value; 0 where
 * the Python decoder would fail or a longer varint begins. */
static int
read_varint(const unsigned char *buf, int64_t size, int64_t *pos, int64_t *value)
{
    uint64_t raw = 0;
    int shift = 0;
    int64_t p = *pos;
    for (;;) {
        if (p >= size || shift > 56) {
            return 0;
        }
        unsigned char byte = buf[p++];
        raw |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) {
            break;
        }
        shift += 7;
    }
    *value = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
    *pos = p;
    return 1;
}

static PyObject *
scan(PyObject *module, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t start;
    long long count;
    if (!PyArg_ParseTuple(args, "y*nL", &view, &start, &count)) {
        return NULL;
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    const int64_t size = (int64_t)view.len;
    int64_t pos = (int64_t)start;
    long long keyless = 0;
    int64_t low = 0, high = 0;
    int consecutive = 1;
    int ok = pos >= 0;
    for (long long index = 0; ok && index < count; index++) {
        int64_t length, end, ts_delta, offset_delta, n, n_headers;
        if (pos >= size || !read_varint(buf, size, &pos, &length)) {
            ok = 0;
            break;
        }
        end = pos + length;
        if (length < 1 || end > size) {
            ok = 0;
            break;
        }
        pos += 1; /* attributes */
        if (!read_varint(buf, size, &pos, &ts_delta)) {
            ok = 0;
            break;
        }
        if (index == 0) {
            low = high = ts_delta;
        } else if (ts_delta < low) {
            low = ts_delta;
        } else if (ts_delta > high) {
            high = ts_delta;
        }
        if (!read_varint(buf, size, &pos, &offset_delta)) {
            ok = 0;
            break;
        }
        if (offset_delta != index) {
            consecutive = 0;
        }
        if (!read_varint(buf, size, &pos, &n)) { /* key */
            ok = 0;
            break;
        }
        if (n > 0) {
            pos += n;
        } else if (n < 0) {
            keyless += 1;
        }
        if (pos > size || !read_varint(buf, size, &pos, &n)) { /* value */
            ok = 0;
            break;
        }
        if (n > 0) {
            pos += n;
        }
        if (pos > size || !read_varint(buf, size, &pos, &n_headers)) {
            ok = 0;
            break;
        }
        if (n_headers < 0 || n_headers > end - pos) {
            ok = 0;
            break;
        }
        for (int64_t h = 0; ok && h < n_headers; h++) {
            if (!read_varint(buf, size, &pos, &n) || n < 0) { /* header key */
                ok = 0;
                break;
            }
            pos += n;
            if (pos > size || !read_varint(buf, size, &pos, &n)) { /* header value */
                ok = 0;
                break;
            }
            if (n > 0) {
                pos += n;
            }
            if (pos > size) {
                ok = 0;
            }
        }
        if (ok && pos != end) {
            ok = 0;
        }
    }
    PyBuffer_Release(&view);
    if (!ok || pos != size) {
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(LLLO)", keyless, (long long)low, (long long)high,
                         consecutive ? Py_True : Py_False);
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(buf, pos, count) -> (keyless, min_ts_delta, max_ts_delta, consecutive) or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scan",
    "records.scan_records' loop over a batch's records, in C.", -1, methods,
};

PyMODINIT_FUNC
PyInit__scan(void)
{
    return PyModule_Create(&module);
}
