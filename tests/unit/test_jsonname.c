/*
 * @file test_jsonname.c
 * Unit tests of tools/jsonname.c: names with quotes, backslashes, control
 * bytes and bytes that are not UTF-8 come out as valid JSON (jansson
 * reads the text back), invalid bytes as U+FFFD with a lossless KEY_hex,
 * and valid UTF-8 unchanged with no KEY_hex.
 */
#include "jsonname.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_valid_utf8(void **state)
{
    (void)state;
    assert_true(jsonname_valid_utf8("plain \"q\" \\ \n\t\x01", 15));
    assert_true(jsonname_valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14));
    assert_false(jsonname_valid_utf8("\xff", 1));
    assert_false(jsonname_valid_utf8("\xc0\xaf", 2));         /* overlong '/' */
    assert_false(jsonname_valid_utf8("\xed\xa0\x80", 3));     /* a surrogate */
    assert_false(jsonname_valid_utf8("\xf4\x90\x80\x80", 4)); /* past U+10FFFF */
    assert_false(jsonname_valid_utf8("\xe2\x82", 2));         /* cut short */
}

/* object with name under "name", printed and read back by jansson. */
static json_t *round_trip(const char *name)
{
    json_t *object = json_object();
    char *text;
    json_error_t error;
    json_t *back;

    assert_int_equal(jsonname_set(object, "name", name), 0);
    text = json_dumps(object, 0);
    assert_non_null(text);
    assert_null(strchr(text, '\n')); /* one line, even for a name with a newline */
    back = json_loads(text, 0, &error);
    assert_non_null(back);
    free(text);
    json_decref(object);
    return back;
}

static void test_names_round_trip(void **state)
{
    const char *tricky = "a\"b\\c\nd\te\x01\x1f" "f\xc3\xa9";
    json_t *back;
    (void)state;

    back = round_trip(tricky);
    assert_string_equal(json_string_value(json_object_get(back, "name")), tricky);
    assert_null(json_object_get(back, "name_hex"));
    json_decref(back);

    /* Not UTF-8: U+FFFD per bad byte, and the exact bytes in hex. */
    back = round_trip("x\xff\xfey\xc3");
    assert_string_equal(json_string_value(json_object_get(back, "name")),
                        "x\xef\xbf\xbd\xef\xbf\xbdy\xef\xbf\xbd");
    assert_string_equal(json_string_value(json_object_get(back, "name_hex")), "78fffe79c3");
    json_decref(back);
}

static void test_print_one_line(void **state)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    json_t *root = json_pack("{s:I}", "id", (json_int_t)3);
    (void)state;

    assert_int_equal(jsonname_set(root, "machine", "m\n1"), 0);
    assert_int_equal(jsonname_print(out, root), 0);
    assert_int_equal(jsonname_print(out, NULL), -1);
    fclose(out);
    assert_string_equal(buf, "{\"id\": 3, \"machine\": \"m\\n1\"}\n");
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_utf8),
        cmocka_unit_test(test_names_round_trip),
        cmocka_unit_test(test_print_one_line),
    };
    return cmocka_run_group_tests_name("jsonname", tests, NULL, NULL);
}
