// io::PrintableFilter and the printable output of a real process: what reaches descriptors 1 and
// 2 through printf, iostreams and fprintf(stderr) once install_printable_output() ran.
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "cohort/io/terminal.hpp"
#include "cohort/io/text.hpp"
#include "scratch.hpp"

namespace io = cohort::io;

namespace {

std::string pass_in_pieces(const std::string& text, std::size_t piece) {
  io::PrintableFilter filter;
  std::string out;
  for (std::size_t i = 0; i < text.size(); i += piece) {
    out += filter.pass(text.data() + i, std::min(piece, text.size() - i));
  }
  return out + filter.finish();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(io_terminal)

BOOST_AUTO_TEST_CASE(keeps_text_newlines_tabs_and_utf8) {
  const std::string text = "step 3\tloss 0.25\ncaf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\n";
  for (std::size_t piece : {1, 2, 3, 5, 1000}) BOOST_TEST(pass_in_pieces(text, piece) == text);
}

BOOST_AUTO_TEST_CASE(replaces_controls_and_bytes_that_are_not_utf8) {
  // ESC (a cursor move), a C1 CSI as UTF-8, a raw C1 byte, DEL, a carriage return, a bare
  // continuation byte, a lead byte cut short by ASCII, an invalid lead byte.
  const std::string text =
      "a\x1b[2Jb \xc2\x9b"
      "31m \x9b \x7f \r \x80 \xc3z \xff\n";
  for (std::size_t piece : {1, 2, 7, 1000}) {
    BOOST_TEST(pass_in_pieces(text, piece) == "a?[2Jb ?31m ? ? ? ? ?z ?\n");
  }
}

BOOST_AUTO_TEST_CASE(refuses_what_only_looks_like_utf8) {
  // An overlong ESC (C0 9B), an overlong '/' in three bytes (E0 80 AF), a surrogate (ED A0 80),
  // a lead byte past U+10FFFF (F5), a code point above U+10FFFF (F4 90 80 80): each byte a '?'.
  const std::string text = "a\xc0\x9b b\xe0\x80\xaf c\xed\xa0\x80 d\xf5\x80 e\xf4\x90\x80\x80\n";
  const std::string want = "a?? b??? c??? d?? e????\n";
  for (std::size_t piece : {1, 2, 3, 1000}) BOOST_TEST(pass_in_pieces(text, piece) == want);
  BOOST_TEST(io::printable("\xc0\x9b\xed\xa0\x80") == "?????");
  BOOST_TEST(io::printable("U+10FFFF \xf4\x8f\xbf\xbf ok") == "U+10FFFF \xf4\x8f\xbf\xbf ok");
}

BOOST_AUTO_TEST_CASE(holds_a_split_sequence_until_its_end_and_finishes_a_cut_one) {
  io::PrintableFilter filter;
  BOOST_TEST(filter.pass("x\xe2\x82", 3) == "x");  // the euro sign's first two bytes
  BOOST_TEST(filter.pass("\xac!", 2) == "\xe2\x82\xac!");
  BOOST_TEST(filter.pass("\xf0\x9f", 2).empty());
  BOOST_TEST(filter.finish() == "??");  // the output ended inside a sequence
  BOOST_TEST(filter.pass("ok", 2) == "ok");
}

BOOST_AUTO_TEST_CASE(filters_what_a_process_prints_by_every_way) {
  const auto dir = cohort::test::fresh_dir("terminal");
  const std::string out_path = dir / "out", err_path = dir / "err";
  const pid_t child = fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {  // descriptors 1 and 2 to files, then print as commands do
    std::freopen(out_path.c_str(), "w", stdout);
    std::freopen(err_path.c_str(), "w", stderr);
    io::install_printable_output();
    std::printf("printf \x1b]0;title\x07 %s\n", "name\xff");
    std::cout << "cout caf\xc3"
              << "\xa9 \x1b[2J" << std::endl;
    std::fprintf(stderr, "stderr \x1b[31mred\n");
    std::cerr << "cerr \xc2\x9b"
              << "\n";
    io::write_control(stdout, "\r\x1b[K");
    std::printf("after\n");
    std::clog << "clog \x1b[H\n";
    std::printf("cut \xe2\x82");  // a character its end never comes to: '?'s at exit
    std::exit(0);                 // as a command ends: the filtered streams flushed at exit
  }
  int status = 0;
  BOOST_REQUIRE(waitpid(child, &status, 0) == child);
  BOOST_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  BOOST_TEST(cohort::test::read(out_path) ==
             "printf ?]0;title? name?\ncout caf\xc3\xa9 ?[2J\n\r\x1b[Kafter\ncut ??");
  BOOST_TEST(cohort::test::read(err_path) == "stderr ?[31mred\ncerr ?\nclog ?[H\n");
  BOOST_TEST(io::terminal_fd(stdout) == STDOUT_FILENO);
}

BOOST_AUTO_TEST_SUITE_END()
