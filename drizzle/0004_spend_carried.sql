CREATE TABLE `workflow_spend_carried` (
	`project_id` text NOT NULL,
	`hour` integer NOT NULL,
	`runs` integer NOT NULL,
	`tokens` integer NOT NULL,
	PRIMARY KEY(`project_id`, `hour`),
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
