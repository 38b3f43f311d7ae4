DROP TABLE IF EXISTS vigil_instance, scheduler_lock, alert_outbox, service_status,
    monitoring_job_result, monitoring_job, monitored_service, monitoring_group;
