CREATE TABLE `secret_key_check` (
	`id` integer PRIMARY KEY NOT NULL,
	`iv` blob NOT NULL,
	`ciphertext` blob NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL
);
