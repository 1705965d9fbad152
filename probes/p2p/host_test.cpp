// p2p's command line, in-process: a bad option gets one line naming what is wrong and what is
// valid, exit 2.
#include <gtest/gtest.h>

#include "tests/host/cli_fixtures.hpp"

using cli_fixtures::mentions;
using fixtures::run;

// --device: p2p measures between the GPUs --devices selects; one past the machine's exits 3.
TEST(Cli, P2pTakesDevicesNotDevice) {
  const auto p2p = run({"p2p", "--device", "1"});
  EXPECT_EQ(p2p.code, 2);
  EXPECT_TRUE(mentions(p2p.err, "p2p measures between GPUs: choose them with --devices")) << p2p.err;
  EXPECT_EQ(run({"p2p", "--devices", "99"}).code, 3);
}

// p2p's --size-mib: MiB from 1 to 16384, refused before any device work.
TEST(Cli, P2pSizeIsRefusedOutsideItsRange) {
  for (const char* bad : {"0", "16385"}) {
    const auto r = run({"p2p", "--devices", "0,1", "--size-mib", bad});
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_TRUE(mentions(r.err, "give MiB from 1 to 16384")) << r.err;
  }
  EXPECT_EQ(run({"p2p", "--devices", "0,1", "--size-mib", "x"}).code, 2);
}
