/* Negative control (issue 21 item 6): refuses every call with a message that holds a control
   character (\x01), a terminal escape sequence (ESC [31m ... ESC [0m), a byte that is not UTF-8
   (\xff) and a bidirectional override (U+202E). kcv must still write a JSON report a JSON parser
   reads and JUnit XML an XML parser reads, and put no raw escape on the terminal: the refusal
   is shown as text ("\x01", "\x1b[31m", "\xff", "\u202e"). Expected: FAIL (REFUSED). */
#include <string.h>

#include <kcv/abi.h>

int kcv_run(const kcv_call* call) {
  static const char msg[] = "no\x01 \x1b[31mred\x1b[0m \xff\xfe bytes \xe2\x80\xae reversed";
  if (call->error && call->error_len > 0) {
    size_t n = sizeof msg < (size_t)call->error_len ? sizeof msg : (size_t)call->error_len;
    memcpy(call->error, msg, n);
    call->error[n - 1] = '\0';
  }
  return 1;
}
