CREATE TABLE `source_rules` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`source_id` text NOT NULL,
	`subject_kind` text NOT NULL,
	`subject` text NOT NULL,
	`path` text DEFAULT '' NOT NULL,
	`effect` text NOT NULL,
	`perms` text NOT NULL,
	`seeded` integer DEFAULT false NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`source_id`) REFERENCES `sources`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `source_rules_source` ON `source_rules` (`source_id`);--> statement-breakpoint
CREATE TABLE `sources` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`slug` text NOT NULL,
	`label` text NOT NULL,
	`kind` text NOT NULL,
	`connector` text NOT NULL,
	`root` text,
	`enabled` integer DEFAULT true NOT NULL,
	`running` integer DEFAULT true NOT NULL,
	`seeded_at` integer,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sources_project_slug` ON `sources` (`project_id`,`slug`);