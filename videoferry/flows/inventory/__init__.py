"""The inventory command: a platform's library listed and written as an inventory migrate takes."""
