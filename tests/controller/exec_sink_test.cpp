// The exec sink with real child processes (python3): replies, crashes and restarts, timeouts,
// garbage, one child per worker thread that ends with the thread, and the request line.
#include "controller/sinks/exec_sink.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "policies/config_reader.h"

namespace lagpilot {
namespace {

// A child that answers every line with `reply`, and exits after `exit_after` lines (0: never).
ExecSinkConfig python_child(const std::string& reply, int exit_after = 0, double timeout = 5) {
  ExecSinkConfig c;
  c.command = {"python3", "-u", "-c",
               "import sys\n"
               "n = 0\n"
               "for line in sys.stdin:\n"
               "    n += 1\n"
               "    sys.stdout.write('" +
                   reply +
                   "\\n')\n"
                   "    sys.stdout.flush()\n"
                   "    if " +
                   std::to_string(exit_after) + " and n >= " + std::to_string(exit_after) +
                   ":\n"
                   "        sys.exit(3)\n"};
  c.timeout_seconds = timeout;
  c.restart_backoff_seconds = 0.01;
  return c;
}

SourceMessage message(int64_t offset = 7) {
  SourceMessage m;
  m.topic = "events";
  m.partition = 1;
  m.offset = offset;
  m.key = "k";
  m.has_key = true;
  m.value = "hello";
  m.timestamp_ms = 1000;
  return m;
}

TEST(ExecSink, OkRepliesAreDone) {
  ExecSink sink(python_child(R"({"ok": true})"));
  for (int i = 0; i < 50; ++i) ASSERT_EQ(sink.deliver(message(i)).result, DeliveryResult::kDone);
  EXPECT_EQ(sink.children_running(), 1);
  EXPECT_EQ(sink.restarts(), 0u);
}

TEST(ExecSink, NotOkRepliesAreRetriedOrPermanentAsTheChildSays) {
  ExecSink transient(python_child(R"({"ok": false, "error": "busy", "retry": true})"));
  Delivery d = transient.deliver(message());
  EXPECT_EQ(d.result, DeliveryResult::kRetry);
  EXPECT_TRUE(d.pushback);
  EXPECT_EQ(d.error, "busy");
  ExecSink permanent(python_child(R"({"ok": false, "error": "bad schema", "retry": false})"));
  d = permanent.deliver(message());
  EXPECT_EQ(d.result, DeliveryResult::kPermanent);
  EXPECT_EQ(d.error, "bad schema");
}

TEST(ExecSink, ACrashedChildIsRestartedAndItsMessageRetried) {
  ExecSink sink(python_child(R"({"ok": true})", /*exit_after=*/3));
  int done = 0, retried = 0;
  for (int i = 0; i < 12; ++i) {
    const Delivery d = sink.deliver(message(i));
    (d.result == DeliveryResult::kDone ? done : retried)++;
    if (d.result == DeliveryResult::kRetry) {
      EXPECT_NE(d.error.find("exited with status 3"), std::string::npos) << d.error;
    }
  }
  // Each child answers 3 and exits; the 4th line finds it gone, the 5th starts a new one.
  EXPECT_EQ(done, 9);
  EXPECT_EQ(retried, 3);
  EXPECT_EQ(sink.restarts(), 2u);  // after the 4th and the 8th; the 12th's comes next time
}

TEST(ExecSink, ASilentChildTimesOutAndIsReplaced) {
  ExecSinkConfig c;
  c.command = {"python3", "-c", "import time\ntime.sleep(60)"};
  c.timeout_seconds = 0.2;
  c.restart_backoff_seconds = 0;
  ExecSink sink(c);
  const Delivery d = sink.deliver(message());
  EXPECT_EQ(d.result, DeliveryResult::kRetry);
  EXPECT_NE(d.error.find("no reply within"), std::string::npos) << d.error;
}

TEST(ExecSink, GarbageIsNotAReply) {
  ExecSink sink(python_child("hello there"));
  const Delivery d = sink.deliver(message());
  EXPECT_EQ(d.result, DeliveryResult::kRetry);
  EXPECT_NE(d.error.find("not a reply"), std::string::npos) << d.error;
}

TEST(ExecSink, AMissingProgramIsATransientFailure) {
  ExecSinkConfig c;
  c.command = {"/nonexistent/lagpilot-worker"};
  c.restart_backoff_seconds = 0;
  ExecSink sink(c);
  const Delivery d = sink.deliver(message());
  EXPECT_EQ(d.result, DeliveryResult::kRetry);
  EXPECT_NE(d.error.find("cannot start"), std::string::npos) << d.error;
}

TEST(ExecSink, OneChildPerWorkerThreadEndingWithTheThread) {
  ExecSink sink(python_child(R"({"ok": true})"));
  std::atomic<int> done{0};
  std::atomic<int> started{0};
  std::atomic<bool> release{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < 3; ++t) {
    workers.emplace_back([&] {
      for (int i = 0; i < 10; ++i) done += sink.deliver(message(i)).result == DeliveryResult::kDone;
      ++started;
      while (!release.load()) std::this_thread::yield();
    });
  }
  while (started.load() < 3) std::this_thread::yield();
  EXPECT_EQ(sink.children_running(), 3);
  release = true;
  for (auto& w : workers) w.join();
  EXPECT_EQ(done.load(), 30);
  EXPECT_EQ(sink.children_running(), 0);  // each thread's end stopped its child
}

TEST(ExecSink, RequestLinesCarryTheRecordAndBase64ForBinary) {
  SourceMessage m = message(42);
  nlohmann::json j = nlohmann::json::parse(exec_request_line(m));
  EXPECT_EQ(j["topic"], "events");
  EXPECT_EQ(j["partition"], 1);
  EXPECT_EQ(j["offset"], 42);
  EXPECT_EQ(j["key"], "k");
  EXPECT_EQ(j["value"], "hello");
  EXPECT_EQ(j["timestamp"], 1000);
  EXPECT_FALSE(j.contains("value_encoding"));
  EXPECT_EQ(j["headers"], nlohmann::json::array());
  m.headers = {{"trace-id", "abc"}, {"trace-id", "def"}};
  j = nlohmann::json::parse(exec_request_line(m));
  EXPECT_EQ(j["headers"], nlohmann::json::parse(R"([["trace-id","abc"],["trace-id","def"]])"));
  m.value = std::string("\xff\x00\x01", 3);
  m.has_key = false;
  j = nlohmann::json::parse(exec_request_line(m));
  EXPECT_EQ(j["value"], "/wAB");
  EXPECT_EQ(j["value_encoding"], "base64");
  EXPECT_TRUE(j["key"].is_null());
}

TEST(Utf8AndBase64, Basics) {
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("gr\xc3\xbc\xc3\x9f \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xc3"));          // truncated
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));      // overlong
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));  // surrogate
  EXPECT_FALSE(is_valid_utf8("\xff"));
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
}

TEST(ExecSinkConfig, NamesWhatIsWrong) {
  try {
    ExecSinkConfig::from_json({{"type", "exec"}}, "handler");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "handler.command");
  }
  try {
    ExecSinkConfig::from_json({{"command", {"python3", 3}}}, "handler");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "handler.command[1]");
  }
  EXPECT_EQ(ExecSinkConfig::from_json({{"command", {"w"}}, {"timeout_seconds", 2}}, "handler")
                .timeout_seconds,
            2);
}

}  // namespace
}  // namespace lagpilot
