#pragma once
// Owners for librdkafka's C handles: each is a std::unique_ptr whose deleter calls the matching
// rd_kafka_*_destroy, so that no code path destroys a handle by hand (and none leaks one on an
// early return or an exception). Take a raw pointer with .get() for librdkafka calls; when
// librdkafka takes ownership itself (rd_kafka_new() takes the conf on success), hand it over
// with .release().
//
// Notes on ownership that the types cannot express:
//  * rd_kafka_new() consumes its conf only when it succeeds: keep the RdKafkaConf on failure.
//  * A mock cluster created by a handle (test.mock.num.brokers, rd_kafka_handle_mock_cluster)
//    belongs to that handle and must not be destroyed separately; RdKafkaMockCluster is for
//    clusters from rd_kafka_mock_cluster_new() only.
//  * Destroy topic handles before the rd_kafka_t they came from (declare the RdKafka member
//    before the RdKafkaTopic member, so that it is destroyed last).
//
// Thread-safety: as the handles themselves (librdkafka's rules); the owners add nothing.

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <memory>

namespace lagpilot {
namespace rdkafka_detail {

template <typename T, void (*Destroy)(T*)>
struct Deleter {
  void operator()(T* p) const noexcept {
    if (p != nullptr) Destroy(p);
  }
};

}  // namespace rdkafka_detail

template <typename T, void (*Destroy)(T*)>
using RdKafkaOwner = std::unique_ptr<T, rdkafka_detail::Deleter<T, Destroy>>;

using RdKafka = RdKafkaOwner<rd_kafka_t, rd_kafka_destroy>;
using RdKafkaConf = RdKafkaOwner<rd_kafka_conf_t, rd_kafka_conf_destroy>;
using RdKafkaPartitionList =
    RdKafkaOwner<rd_kafka_topic_partition_list_t, rd_kafka_topic_partition_list_destroy>;
using RdKafkaMessage = RdKafkaOwner<rd_kafka_message_t, rd_kafka_message_destroy>;
using RdKafkaQueue = RdKafkaOwner<rd_kafka_queue_t, rd_kafka_queue_destroy>;
using RdKafkaTopic = RdKafkaOwner<rd_kafka_topic_t, rd_kafka_topic_destroy>;
using RdKafkaError = RdKafkaOwner<rd_kafka_error_t, rd_kafka_error_destroy>;
using RdKafkaHeaders = RdKafkaOwner<rd_kafka_headers_t, rd_kafka_headers_destroy>;
using RdKafkaMockCluster = RdKafkaOwner<rd_kafka_mock_cluster_t, rd_kafka_mock_cluster_destroy>;
using RdKafkaMetadata = RdKafkaOwner<const rd_kafka_metadata_t, rd_kafka_metadata_destroy>;

// A new, empty partition list with room for `size` entries.
inline RdKafkaPartitionList make_partition_list(int size) {
  return RdKafkaPartitionList(rd_kafka_topic_partition_list_new(size));
}

}  // namespace lagpilot
