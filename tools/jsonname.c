/*
 * @file jsonname.c
 * See jsonname.h.
 */
#include "jsonname.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of the valid UTF-8 sequence at text[0..left), or 0 if it is not one. */
static size_t jsonname_sequence(const unsigned char *text, size_t left)
{
    unsigned char first = text[0];
    size_t need;
    uint32_t code;

    if (first < 0x80)
        return 1;
    if (first >= 0xc2 && first <= 0xdf) {
        need = 2;
        code = first & 0x1f;
    } else if (first >= 0xe0 && first <= 0xef) {
        need = 3;
        code = first & 0x0f;
    } else if (first >= 0xf0 && first <= 0xf4) {
        need = 4;
        code = first & 0x07;
    } else {
        return 0; /* a continuation byte, an overlong lead (c0, c1) or past U+10FFFF */
    }
    if (left < need)
        return 0;
    for (size_t i = 1; i < need; i++) {
        if ((text[i] & 0xc0) != 0x80)
            return 0;
        code = (code << 6) | (text[i] & 0x3f);
    }
    if ((need == 3 && code < 0x800) || (need == 4 && (code < 0x10000 || code > 0x10ffff)) ||
        (code >= 0xd800 && code <= 0xdfff))
        return 0;
    return need;
}

bool jsonname_valid_utf8(const char *text, size_t len)
{
    const unsigned char *bytes = (const unsigned char *)text;
    for (size_t at = 0; at < len;) {
        size_t step = jsonname_sequence(bytes + at, len - at);
        if (step == 0)
            return false;
        at += step;
    }
    return true;
}

json_t *jsonname_string(const char *name)
{
    static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
    const unsigned char *bytes = (const unsigned char *)name;
    size_t len, out = 0;
    char *text;
    json_t *string;

    if (!name)
        return NULL;
    len = strlen(name);
    if (jsonname_valid_utf8(name, len))
        return json_stringn(name, len);
    text = malloc(len * 3 + 1); /* each byte at worst becomes U+FFFD */
    if (!text)
        return NULL;
    for (size_t at = 0; at < len;) {
        size_t step = jsonname_sequence(bytes + at, len - at);
        if (step == 0) {
            memcpy(text + out, replacement, 3);
            out += 3;
            at++;
        } else {
            memcpy(text + out, name + at, step);
            out += step;
            at += step;
        }
    }
    string = json_stringn(text, out);
    free(text);
    return string;
}

int jsonname_set(json_t *object, const char *key, const char *name)
{
    size_t len = name ? strlen(name) : 0;
    json_t *string = jsonname_string(name ? name : "");
    char hex_key[128];

    if (!string || json_object_set_new(object, key, string) != 0)
        return -1;
    if (jsonname_valid_utf8(name ? name : "", len))
        return 0;
    char *hex = malloc(len * 2 + 1);
    if (!hex)
        return -1;
    for (size_t i = 0; i < len; i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)name[i]);
    hex[len * 2] = '\0';
    snprintf(hex_key, sizeof(hex_key), "%s_hex", key);
    int rc = json_object_set_new(object, hex_key, json_string(hex));
    free(hex);
    return rc == 0 ? 0 : -1;
}

int jsonname_print(FILE *out, json_t *root)
{
    int rc = root && json_dumpf(root, out, JSON_REAL_PRECISION(9)) == 0 && fputc('\n', out) != EOF ? 0 : -1;
    json_decref(root);
    return rc;
}

int jsonname_fprint_string(FILE *out, const char *name)
{
    json_t *string = jsonname_string(name ? name : "");
    int rc = string && json_dumpf(string, out, JSON_ENCODE_ANY) == 0 ? 0 : -1;
    json_decref(string);
    return rc;
}

int jsonname_fprint_member(FILE *out, const char *key, const char *name)
{
    json_t *member = json_object();
    char *text;
    size_t len;
    int rc = -1;

    if (member && jsonname_set(member, key, name) == 0) {
        text = json_dumps(member, 0);
        len = text ? strlen(text) : 0;
        if (len >= 2) {
            /* The object's members without its braces. */
            fprintf(out, "%.*s", (int)(len - 2), text + 1);
            rc = 0;
        }
        free(text);
    }
    json_decref(member);
    return rc;
}
