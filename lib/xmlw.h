/* xmlw.h -- writing the XML of the AWS Query protocol's answers into a
 * strbuf: elements opened and closed by name, and text escaped so that
 * whatever a value holds stays text (& < > " ' escaped; characters XML 1.0
 * cannot carry, such as control characters, become U+FFFD). */
#ifndef CAIRN_XMLW_H
#define CAIRN_XMLW_H

#include "strbuf.h"

/* <tag> */
void xmlw_open(struct strbuf *b, const char *tag);

/* </tag> */
void xmlw_close(struct strbuf *b, const char *tag);

/* text, escaped (text is UTF-8; what is not becomes U+FFFD). */
void xmlw_text(struct strbuf *b, const char *text);

/* <tag>text</tag>, the text escaped; nothing at all when text is NULL. */
void xmlw_elem(struct strbuf *b, const char *tag, const char *text);

#endif
