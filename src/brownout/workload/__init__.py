"""Workloads: stream generators, producers and consumers that record a history.

    generators   clicks / payments / logs: deterministic Message streams (make_stream)
    producer     ProducerSettings, ProducerGroup, DeliveryRecorder (invoke + ok/fail/info)
    errors       the fail-vs-info classification of producer errors (classify)
    ratelimit    TokenBucket
    consumer     ConsumerSettings, ConsumerWorker, PollRecorder (poll/assign/revoke/commit)
    kp_consumer  KafkaPythonConsumerWorker: the same history from kafka-python consumers
    consumer_group  ConsumerGroup: the workers of one ConsumerSettings, of either client
    clientstats  MetadataRecorder: each client's broker list from librdkafka statistics
    observer     Observer: leaders, leader epochs, ISR, controller (f="observe")
    final_read   final_read / write_final_read / load_final_read
    run          WorkloadRun (a run directory), do_final_read
    summary      counts(run_dir), and the high watermarks the final read reached
    history      the event format and its writer
"""
