/* xmlw.c -- the XML of the AWS Query protocol's answers (xmlw.h). */
#include "xmlw.h"

#include <string.h>

#include "utf8.h"

void xmlw_open(struct strbuf *b, const char *tag)
{
    strbuf_printf(b, "<%s>", tag);
}

void xmlw_close(struct strbuf *b, const char *tag)
{
    strbuf_printf(b, "</%s>", tag);
}

/* Whether the code point of the n-byte sequence at s may appear in XML 1.0:
 * tab, newline, carriage return and everything from U+0020 but the
 * surrogates (which UTF-8 checking already refuses) and U+FFFE/U+FFFF. */
static bool xml_char(const unsigned char *s, size_t n)
{
    if (n == 1)
        return s[0] >= 0x20 || s[0] == '\t' || s[0] == '\n' || s[0] == '\r';
    if (n == 3 && s[0] == 0xef && s[1] == 0xbf && (s[2] == 0xbe || s[2] == 0xbf))
        return false;
    return true;
}

void xmlw_text(struct strbuf *b, const char *text)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t left = strlen(text);

    while (left > 0) {
        size_t n = utf8_sequence(s, left);
        if (n == 0 || !xml_char(s, n)) {
            strbuf_printf(b, "\xef\xbf\xbd");
            n = n == 0 ? 1 : n;
        } else if (n == 1 && strchr("&<>\"'", s[0]) != NULL) {
            static const char *const entity[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
            strbuf_printf(b, "%s", entity[strchr("&<>\"'", s[0]) - "&<>\"'"]);
        } else {
            strbuf_printf(b, "%.*s", (int)n, (const char *)s);
        }
        s += n;
        left -= n;
    }
}

void xmlw_elem(struct strbuf *b, const char *tag, const char *text)
{
    if (text == NULL)
        return;
    xmlw_open(b, tag);
    xmlw_text(b, text);
    xmlw_close(b, tag);
}
