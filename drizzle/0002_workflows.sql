CREATE TABLE `workflow_run_events` (
	`run_id` text NOT NULL,
	`seq` integer NOT NULL,
	`type` text NOT NULL,
	`text` text NOT NULL,
	`at` integer NOT NULL,
	PRIMARY KEY(`run_id`, `seq`),
	FOREIGN KEY (`run_id`) REFERENCES `workflow_runs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `workflow_runs` (
	`id` text PRIMARY KEY NOT NULL,
	`workflow_id` text NOT NULL,
	`project_id` text NOT NULL,
	`number` integer NOT NULL,
	`trigger_id` text,
	`trigger_kind` text NOT NULL,
	`mode` text NOT NULL,
	`status` text NOT NULL,
	`input_text` text,
	`source` text NOT NULL,
	`error` text,
	`cancelled` text,
	`attempts` integer DEFAULT 0 NOT NULL,
	`tokens_used` integer DEFAULT 0 NOT NULL,
	`queued_at` integer NOT NULL,
	`started_at` integer,
	`finished_at` integer,
	`retry_at` integer,
	FOREIGN KEY (`workflow_id`) REFERENCES `workflows`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `workflow_runs_number` ON `workflow_runs` (`workflow_id`,`number`);--> statement-breakpoint
CREATE TABLE `workflow_spend_limits` (
	`project_id` text PRIMARY KEY NOT NULL,
	`runs_per_day` integer NOT NULL,
	`tokens_per_day` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `workflow_triggers` (
	`id` text PRIMARY KEY NOT NULL,
	`workflow_id` text NOT NULL,
	`kind` text NOT NULL,
	`token_salt` text,
	`token_hash` text,
	`token_hint` text,
	`binding_id` text,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`rotated_at` integer,
	`revoked_at` integer,
	FOREIGN KEY (`workflow_id`) REFERENCES `workflows`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `workflow_triggers_workflow` ON `workflow_triggers` (`workflow_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `workflow_triggers_binding` ON `workflow_triggers` (`binding_id`);--> statement-breakpoint
CREATE TABLE `workflows` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`name` text NOT NULL,
	`instruction` text NOT NULL,
	`runner` text NOT NULL,
	`runner_config` text NOT NULL,
	`mode` text NOT NULL,
	`status` text NOT NULL,
	`schedule` text NOT NULL,
	`announce` integer DEFAULT false NOT NULL,
	`template_id` text,
	`template_version` integer,
	`created_by` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `workflows_project` ON `workflows` (`project_id`);