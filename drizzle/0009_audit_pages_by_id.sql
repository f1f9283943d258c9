DROP INDEX `audit_project_at`;--> statement-breakpoint
DROP INDEX `audit_action_at`;--> statement-breakpoint
CREATE INDEX `audit_project_id` ON `audit_log` (`project_id`,`id`);--> statement-breakpoint
CREATE INDEX `audit_action_id` ON `audit_log` (`action`,`id`);