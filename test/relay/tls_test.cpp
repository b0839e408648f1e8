// test/relay/tls_test.cpp: amqps:// is TLS with the broker's certificate
// verified, never plain text (fault 1).  A RabbitMQ node of its own with a
// TLS listener and a CA made with openssl for this run (TlsBroker).
//
//   Tls.RightCaConnectsAndDelivers  the relay and the fulfiller over TLS
//                                   with the right CA and a client
//                                   certificate (the broker sees it): every
//                                   confirmed reservation is fulfilled
//   Tls.RefusedWithoutFallback      a CA that did not sign the broker's
//                                   certificate, a URL host the certificate
//                                   does not name (127.0.0.1 for
//                                   localhost), amqps:// against the plain
//                                   listener: exit 78, nothing published;
//                                   TLS files with amqp://: exit 64
#include <memory>

#include "support/relay/test_bed.h"
#include "support/relay/tls_broker.h"

using namespace std::chrono_literals;
using namespace pgi::test;

namespace {

class Tls : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (unmet(Need::broker).empty()) node_ = std::make_unique<TlsBroker>();
  }
  static void TearDownTestSuite() { node_.reset(); }

  void SetUp() override {
    PGI_REQUIRE(broker);
    ASSERT_TRUE(node_ && node_->ok()) << (node_ ? node_->why() : "");
  }

  /// The TLS flags: CA FILE, with the client certificate.
  static std::vector<std::string> tls(const std::string &ca = "ca.pem",
                                      const std::string &host = "localhost",
                                      bool tls_port = true) {
    std::string url = node_->tls_url(host);
    if (!tls_port)
      url = "amqps://guest:guest@" + host + ":" +
            std::to_string(node_->plain_port());
    return {"--amqp-url",      url,
            "--tls-ca-file",   node_->file(ca),
            "--tls-cert-file", node_->file("client.pem"),
            "--tls-key-file",  node_->file("client.key")};
  }

  static std::unique_ptr<TlsBroker> node_;
};

std::unique_ptr<TlsBroker> Tls::node_;

} // namespace

TEST_F(Tls, RightCaConnectsAndDelivers) {
  TestBed t("tls_right", true, true, node_->plain_url());
  t.prepare_fulfiller();
  reserve_orders(t.db, 5);
  confirm_orders(t.db, 5);
  auto r = t.relay_once(tls());
  EXPECT_EQ(r->stat("stats_final", "published"), "11");
  EXPECT_NE(r->log().find("event=broker_connected broker=amqps://guest@"
                          "localhost:" +
                          std::to_string(node_->tls_port())),
            std::string::npos)
    << r->log();
  EXPECT_EQ(t.broker().depth(t.all), 11); // read over the plain listener

  auto extra = tls();
  extra.push_back("--stats-interval");
  extra.push_back("1s");
  auto f = t.fulfiller(60000, {}, extra);
  EXPECT_TRUE(
    poll_sql(t.db, "SELECT count(*) = 5 FROM fulfillment.request", 15s));
  // the broker sees a TLS connection with the client certificate
  EXPECT_TRUE(poll_until(
    [&] {
      return node_->ctl("list_connections ssl peer_cert_subject")
               .find("CN=pgi-test-client") != std::string::npos;
    },
    10s, 100ms))
    << node_->ctl("list_connections ssl peer_cert_subject");
  stop(*f);
  EXPECT_EQ(f->stat("stats_final", "fulfilled"), "5");
}

// Each refusal ends the program at start with exit 78 and nothing
// published; never a plain-text connection.  (One test, one node: each
// test of this suite starts a broker of its own under ctest.)
TEST_F(Tls, RefusedWithoutFallback) {
  TestBed t("tls_refused", true, true, node_->plain_url());
  reserve_orders(t.db, 2);
  // a CA that did not sign the broker's certificate, for both programs
  auto wrong_ca = t.relay(tls("other-ca.pem"));
  EXPECT_TRUE(
    exits_with(*wrong_ca, 78, "the broker's certificate does not verify"));
  t.prepare_fulfiller();
  auto f = t.fulfiller(0, {}, tls("other-ca.pem"));
  EXPECT_TRUE(exits_with(*f, 78, "the broker's certificate does not verify"));
  // the right CA, but the URL names a host the certificate does not
  auto host = t.relay(tls("ca.pem", "127.0.0.1"));
  EXPECT_TRUE(exits_with(*host, 78, "does not name host 127.0.0.1"));
  // amqps:// against the plain listener
  auto plain = t.relay(tls("ca.pem", "localhost", false));
  EXPECT_TRUE(exits_with(*plain, 78, "(the port does not speak TLS)"));
  // TLS files with an amqp:// URL: a usage error, before connecting
  auto mixed = t.relay({"--tls-ca-file", node_->file("ca.pem")});
  EXPECT_TRUE(exits_with(*mixed, 64, "need an amqps:// URL"));

  EXPECT_EQ(t.broker().depth(t.all), 0);
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM inventory.outbox WHERE "
                        "published_at IS NULL AND attempts = 0"),
            3);
}
